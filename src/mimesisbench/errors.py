"""One exception hierarchy for the whole tool; the CLI maps each class to an exit code.

Library code raises these and never calls ``sys.exit``; only ``mimesisbench.cli`` turns them
into messages and exit codes. Anything that is not a ``MimesisError`` is a bug and keeps its
traceback.
"""

from __future__ import annotations


class MimesisError(Exception):
    """Base class of every error a user can cause or fix."""

    exit_code: int = 1


class InputError(MimesisError):
    """An input file is missing, unreadable, empty or not of the expected format."""

    exit_code = 3


class TraceError(InputError):
    """A trace (audit log, snapshot, event file) cannot be used."""


class ProfileError(InputError):
    """A workload profile is invalid; the message names the offending key."""

    exit_code = 4


class ScheduleError(InputError):
    """A schedule cannot be generated or read (bad option, bad schedule directory)."""

    exit_code = 4


class OutputError(MimesisError):
    """An output cannot be written (disk full, no permission, read-only file system); nothing
    partial that looks valid is left behind. Exit code 3, as for files that cannot be read."""

    exit_code = 3


class ConfigError(MimesisError):
    """A command-line option or configuration value is invalid."""

    exit_code = 2


class BackendError(MimesisError):
    """A backend cannot be reached or set up (not an individual failed operation)."""

    exit_code = 5


class SafetyError(MimesisError):
    """An action would touch something outside the base directory it was given."""

    exit_code = 5


class RunIncomplete(MimesisError):
    """A run ended early (interrupt, drift, crashed worker); partial results were written."""

    exit_code = 6


class EnvironmentProblem(MimesisError):
    """Something the tool needs from the machine is missing (Java, Maven, a running HDFS ...)."""

    exit_code = 7
