"""Shared vocabulary: model bases, runner names, evidence kinds, time stamps, token estimate.

Every package that writes a receipt or reads a wire format builds on these bases, so camelCase on
disk, refused unknown keys and the receipt schema version are decided in one place.
"""

import math
import re
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from lorelab._time import timestamp, utc_now

RunnerName = Literal["pytest", "node"]
"""The two test runners lorelab drives."""

RUNNER_NAMES: Final[tuple[RunnerName, ...]] = ("pytest", "node")

TEST_PATHS: Final[dict[RunnerName, re.Pattern[str]]] = {
    "pytest": re.compile(r"tests/test_[A-Za-z0-9_]+\.py"),
    "node": re.compile(r"test/[A-Za-z0-9_][A-Za-z0-9_.-]*\.test\.js"),
}
"""A canonical test file of each runner: the only files an author may write or a lesson hold."""

TEST_PATH_SHAPES: Final[dict[RunnerName, str]] = {
    "pytest": "tests/test_<name>.py",
    "node": "test/<name>.test.js",
}
"""How :data:`TEST_PATHS` are described in messages."""

EvidenceKind = Literal["live", "protocol-fixture"]
"""What a result is evidence of: a real worker (``live``) or the protocol fixture."""

LIVE: Final = "live"
PROTOCOL_FIXTURE: Final = "protocol-fixture"

RECEIPT_SCHEMA_VERSION: Final = 1
"""The version every lorelab receipt and manifest format carries as ``schemaVersion``."""

DEFAULT_TIMEOUT_MS: Final = 115_000
"""How long one worker call may take by default."""

DEFAULT_MAX_OUTPUT_BYTES: Final = 65_536
"""How many bytes of output one worker call may write by default."""


class RecordModel(BaseModel):
    """Base of every receipt, manifest and wire model: camelCase on disk, frozen, strict keys."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
        defer_build=True,
    )

    def to_json(self) -> dict[str, Any]:
        """The model as it is written to disk: JSON types, camelCase keys."""
        return self.model_dump(mode="json", by_alias=True)


class StrictRecordModel(RecordModel):
    """A record read from untrusted JSON: ``"2"`` is not an exit code and ``true`` is not 1."""

    model_config = ConfigDict(strict=True)


class ReceiptModel(RecordModel):
    """A receipt: a record with the one receipt schema version."""

    schema_version: Literal[1] = Field(
        default=RECEIPT_SCHEMA_VERSION, description="Version of this receipt format."
    )


class InputModel(BaseModel):
    """A request from an agent or a user (MCP tool input, CLI payload): snake_case, strict.

    Loose coercion would let unverified work count as verified, so every input type must be the
    JSON type itself.
    """

    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)


class OutputModel(BaseModel):
    """A result handed back to an agent or a user: snake_case, unknown keys refused."""

    model_config = ConfigDict(extra="forbid", defer_build=True)


def estimate_tokens(text: str | None) -> int:
    """ceil(UTF-8 bytes / 4): a labelled estimate, never a tokenizer count; 0 for no text."""
    if not text:
        return 0
    return math.ceil(len(text.encode("utf-8")) / 4)


__all__ = [
    "DEFAULT_TIMEOUT_MS",
    "LIVE",
    "PROTOCOL_FIXTURE",
    "RECEIPT_SCHEMA_VERSION",
    "RUNNER_NAMES",
    "TEST_PATHS",
    "TEST_PATH_SHAPES",
    "EvidenceKind",
    "InputModel",
    "OutputModel",
    "ReceiptModel",
    "RecordModel",
    "RunnerName",
    "StrictRecordModel",
    "estimate_tokens",
    "timestamp",
    "utc_now",
]
