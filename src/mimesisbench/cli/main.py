"""Entry point: the ``mimesisbench`` command group and the error -> exit code mapping."""

from __future__ import annotations

import sys

import click

from mimesisbench import __version__
from mimesisbench.errors import MimesisError


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="mimesisbench")
def cli() -> None:
    """MimesisBench: model-based namespace metadata benchmark (HDFS NameNode, POSIX mounts).

    Pipeline: model (trace -> profile), generate (profile -> namespace + schedule),
    run (replay against a backend), and analyse the results.
    """


def _register() -> None:
    # Each verb lives in its own module; importing them has no side effects beyond defining commands.
    from mimesisbench.cli import (
        cmd_capacity,
        cmd_experiment,
        cmd_generate,
        cmd_hdfs,
        cmd_interfere,
        cmd_micro,
        cmd_model,
        cmd_profile,
        cmd_proxy,
        cmd_report,
        cmd_run,
        cmd_simnn,
        cmd_verbatim,
    )

    for module in (cmd_model, cmd_profile, cmd_generate, cmd_verbatim, cmd_run, cmd_interfere, cmd_hdfs, cmd_proxy, cmd_report, cmd_micro,
                   cmd_experiment, cmd_capacity, cmd_simnn):
        for command in module.COMMANDS:
            cli.add_command(command)


def main(argv: list[str] | None = None) -> None:
    """Run the CLI; user errors print one clear line and exit non-zero, without a traceback."""
    _register()
    try:
        code = cli.main(args=argv, prog_name="mimesisbench", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("interrupted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except MimesisError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
    sys.exit(code if isinstance(code, int) else 0)
