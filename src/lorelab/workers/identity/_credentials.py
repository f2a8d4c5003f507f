"""Credential screening: argv operands that look like keys or secrets are refused unread."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Final

from lorelab.errors import InputFileError

_CREDENTIAL_DIRS: Final = (
    ".ssh",
    ".aws",
    ".config/gcloud",
    ".gnupg",
    ".kube",
    ".docker",
    ".azure",
)
_CREDENTIAL_NAMES: Final = frozenset(
    {
        ".env",
        ".envrc",
        ".netrc",
        "_netrc",
        ".pgpass",
        ".pypirc",
        ".npmrc",
        ".git-credentials",
        ".dockercfg",
    }
)
_CREDENTIAL_SUFFIXES: Final = (".pem", ".key", ".p12", ".pfx")
_CREDENTIAL_PREFIXES: Final = ("id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", ".env.")
_CREDENTIAL_WORDS: Final = ("credential", "secret", "token")


def _home() -> Path:
    return Path(os.path.expanduser("~"))


def credential_reason(operand: str, cwd: Path) -> str | None:
    """Why ``operand`` looks like a credential file, or ``None``. Never opens anything."""
    if not operand or "\x00" in operand:
        return None
    expanded = os.path.expanduser(operand)
    candidate = Path(expanded) if os.path.isabs(expanded) else cwd / expanded
    home = _home()
    for place in {Path(os.path.abspath(candidate)), Path(os.path.realpath(candidate))}:
        for sub in _CREDENTIAL_DIRS:
            secret_dir = home / sub
            if place == secret_dir or secret_dir in place.parents:
                return f"it is under ~/{sub}"
    name = expanded.rstrip("/").rsplit("/", 1)[-1].lower()
    if name in _CREDENTIAL_NAMES:
        return f"{name!r} is a credential file name"
    if name.startswith(_CREDENTIAL_PREFIXES) or name.endswith(_CREDENTIAL_SUFFIXES):
        return f"{name!r} looks like a key or environment file"
    # Free text (a prompt, say) is not a file name; only path-like operands are screened by word.
    path_like = not re.search(r"\s", expanded) and (
        "/" in expanded or "." in name or os.path.lexists(candidate)
    )
    if path_like:
        for word in _CREDENTIAL_WORDS:
            if word in name:
                return f"its name contains {word!r}"
    return None


def _screened_values(operand: str) -> list[str]:
    """The texts of ``operand`` that could name a file, as the program might read them.

    An option's value after ``=``, the text attached to a single-dash flag (``-k/path``,
    ``-kid_rsa``), and whatever follows the first ``/`` or ``~`` anywhere in the operand
    (``-xk/root/.aws/config``, ``src=~/.ssh``): a credential cannot hide behind a flag.
    """
    values: list[str] = []
    if operand.startswith("-"):
        if "=" in operand:
            values.append(operand.split("=", 1)[1])
        if not operand.startswith("--") and len(operand) > 2:
            values.append(operand[2:])
    else:
        values.append(operand)
    for marker in ("/", "~"):
        position = operand.find(marker)
        if position > 0:
            values.append(operand[position:])
    return list(dict.fromkeys(value for value in values if value))


def refuse_credentials(operands: Iterable[str], cwd: Path) -> None:
    for operand in operands:
        for value in _screened_values(operand):
            reason = credential_reason(value, cwd)
            if reason is not None:
                raise InputFileError(
                    f"worker argv operand {value!r} looks like a credential ({reason}); "
                    "lorelab refuses it and never reads it"
                )
