"""Reading pydantic models from bounded, strict JSON files, with one-line errors."""

from __future__ import annotations

import os
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from lorelab.errors import SchemaError
from lorelab.io._bounded import InputKind, read_bounded
from lorelab.io._json import loads_strict

M = TypeVar("M", bound=BaseModel)


def read_json(
    path: str | os.PathLike[str], kind: InputKind = "manifest", limit: int | None = None
) -> Any:
    """Read ``path`` through the bounded reader and parse it as strict JSON."""
    return loads_strict(read_bounded(path, kind, limit), os.fspath(path))


def describe_validation_error(source: str, exc: ValidationError) -> str:
    """One line naming the source, the first failing location and the problem."""
    errors = exc.errors()
    first = errors[0]
    location = ".".join(str(part) for part in first["loc"]) or "(top level)"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{source}: {location}: {first['msg']}{more}"


def validate_model(model: type[M], data: Any, source: str) -> M:
    """Validate ``data`` as ``model``; a mismatch is a :class:`SchemaError` naming ``source``."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise SchemaError(describe_validation_error(source, exc)) from None


def read_model(
    path: str | os.PathLike[str],
    model: type[M],
    kind: InputKind = "manifest",
    limit: int | None = None,
) -> M:
    """Read, strictly parse and validate a JSON file as ``model``."""
    return validate_model(model, read_json(path, kind, limit), os.fspath(path))
