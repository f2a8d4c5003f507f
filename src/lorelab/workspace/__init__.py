"""Disposable projects built from canonical relative paths; cleanup that keeps evidence."""

from lorelab.workspace._paths import (
    MAX_PATH_DEPTH,
    MAX_PATH_LENGTH,
    FileEntry,
    canonical_path,
    check_distinct,
)

__all__ = [
    "MAX_PATH_DEPTH",
    "MAX_PATH_LENGTH",
    "FileEntry",
    "canonical_path",
    "check_distinct",
]
