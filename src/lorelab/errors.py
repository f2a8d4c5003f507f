"""Every error lorelab raises on purpose, and the exit code the CLI gives each one.

The hierarchy::

    LorelabError                      base class; never raised directly
    ├── InvalidInput                  exit 2: bad input or usage, nothing was run
    │   ├── UsageError                a flag or argument combination the command refuses
    │   ├── InputFileError            a path that is not a readable regular file, or too large
    │   ├── JSONInputError            bytes that are not strict JSON (NaN, duplicate keys, ...)
    │   ├── SchemaError               JSON that does not match the expected model
    │   ├── PathError                 a relative path that is not canonical
    │   ├── OutputExistsError         an output directory or receipt that already exists
    │   ├── WorkerUnavailable         a worker, host or memory server that cannot start
    │   └── SandboxUnavailable        untrusted code would run without a working sandbox
    ├── OutcomeFailure                exit 1: the run completed, but an outcome failed
    │   └── ComparisonRefused         two results that must not be compared
    └── IntegrityFailure              exit 3: preflight or integrity failure
        ├── PreflightError            a precondition failed before anything ran
        └── IdentityChanged           a bound file changed between checks

A user sees the message of any of these as one line on stderr, never a traceback. Anything
else that escapes is a bug and keeps its traceback.
"""

from __future__ import annotations


class LorelabError(Exception):
    """Base class of every deliberate lorelab error; ``exit_code`` is what the CLI returns."""

    exit_code: int = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class InvalidInput(LorelabError):
    """Input or usage was invalid; nothing was run. Exit code 2."""

    exit_code = 2


class UsageError(InvalidInput):
    """A command was called with arguments it refuses (for example a budget over its cap)."""


class InputFileError(InvalidInput):
    """A path could not be read as input: missing, not a regular file, or over its size limit."""


class JSONInputError(InvalidInput):
    """Bytes are not strict JSON: not UTF-8, NaN/Infinity, duplicate keys, too deep, malformed."""


class SchemaError(InvalidInput):
    """Well-formed JSON that does not match the model the command expects."""


class PathError(InvalidInput):
    """A relative path is not canonical (absolute, ``..``, backslash, empty segment, ...)."""


class OutputExistsError(InvalidInput):
    """An output directory or receipt already exists; lorelab never reuses or overwrites one."""


class WorkerUnavailable(InvalidInput):
    """A worker, conditions host or memory server cannot start as configured (its program is
    missing, or it needs a setting that is not given); found in preflight, before any trial."""


class SandboxUnavailable(InvalidInput):
    """Untrusted code (a suite under ``--sandbox``, generated tests, reference suites, verify
    commands) would run, but this machine has no working sandbox (bubblewrap missing, or unable
    to create its namespaces) and running it unconfined was not allowed; nothing was run."""


class OutcomeFailure(LorelabError):
    """The run completed but an outcome failed. Exit code 1."""

    exit_code = 1


class ComparisonRefused(OutcomeFailure):
    """Two results were not comparable, so no comparison was reported. Exit code 1."""


class IntegrityFailure(LorelabError):
    """A preflight or integrity check failed. Exit code 3."""

    exit_code = 3


class PreflightError(IntegrityFailure):
    """A precondition failed before any work ran (missing tool, unresolvable launcher, ...)."""


class IdentityChanged(IntegrityFailure):
    """A file bound into an identity changed between two checks."""
