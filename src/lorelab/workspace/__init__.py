"""Disposable projects built from canonical relative paths; cleanup that keeps evidence."""

from lorelab.workspace._paths import (
    MAX_PATH_DEPTH,
    FileEntry,
    canonical_path,
    check_distinct,
)
from lorelab.workspace._project import (
    MAX_FILE_BYTES,
    MAX_PROJECT_BYTES,
    MAX_PROJECT_FILES,
    RunRoot,
    check_layout,
    check_writable,
    is_virtualenv,
    write_files,
)

__all__ = [
    "MAX_FILE_BYTES",
    "MAX_PATH_DEPTH",
    "MAX_PROJECT_BYTES",
    "MAX_PROJECT_FILES",
    "FileEntry",
    "RunRoot",
    "canonical_path",
    "check_distinct",
    "check_layout",
    "check_writable",
    "is_virtualenv",
    "write_files",
]
