"""Time stamps, kept apart from the model bases so that a hook can write one without pydantic."""

from datetime import UTC, datetime


def utc_now() -> datetime:
    """The current time, timezone-aware in UTC."""
    return datetime.now(UTC)


def timestamp(moment: datetime | None = None) -> str:
    """The one time stamp format lorelab writes: ISO 8601, UTC, microseconds, ``Z``."""
    value = (moment or utc_now()).astimezone(UTC)
    return value.isoformat(timespec="microseconds").replace("+00:00", "Z")
