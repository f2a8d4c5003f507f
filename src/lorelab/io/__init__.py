"""Input and output with guarantees: bounded reads, strict and canonical JSON, hashes, receipts."""

from lorelab.io._bounded import (
    FIXTURE_LIMIT,
    LIMITS,
    MANIFEST_LIMIT,
    MIB,
    InputKind,
    open_regular,
    read_bounded,
)
from lorelab.io._hash import LAUNCHER_HASH_CAP, SCRIPT_HASH_CAP, sha256_bytes, sha256_file
from lorelab.io._json import (
    MAX_DEPTH,
    canonical_bytes,
    canonical_json,
    json_bytes,
    loads_strict,
    pretty_json,
)
from lorelab.io._models import describe_validation_error, read_json, read_model, validate_model
from lorelab.io._receipts import ReceiptDir, create_output_dir, validate_receipt_name
from lorelab.io._text import escape_control

__all__ = [
    "FIXTURE_LIMIT",
    "LAUNCHER_HASH_CAP",
    "LIMITS",
    "MANIFEST_LIMIT",
    "MAX_DEPTH",
    "MIB",
    "SCRIPT_HASH_CAP",
    "InputKind",
    "ReceiptDir",
    "canonical_bytes",
    "canonical_json",
    "create_output_dir",
    "describe_validation_error",
    "escape_control",
    "json_bytes",
    "loads_strict",
    "open_regular",
    "pretty_json",
    "read_bounded",
    "read_json",
    "read_model",
    "sha256_bytes",
    "sha256_file",
    "validate_model",
    "validate_receipt_name",
]
