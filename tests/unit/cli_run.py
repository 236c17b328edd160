"""The CLI run in-process, as the tests of its commands use it."""

from __future__ import annotations

import pytest

from mimesisbench.cli.main import main


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run the real entry point (error -> exit code mapping included): exit code, stdout, stderr.

    A traceback on stderr fails the test whatever the exit code: bad input gets a message."""
    with pytest.raises(SystemExit) as info:
        main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err
    code = info.value.code
    return (code if isinstance(code, int) else 0), out, err
