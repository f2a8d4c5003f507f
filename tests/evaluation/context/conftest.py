"""Pytest fixtures for the context evaluation tests."""

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.context_traces import fixture_dict


@pytest.fixture
def write_fixture(tmp_path: Path) -> Callable[..., Path]:
    """Write a fixture file under tmp_path/fixtures and return its path."""
    directory = tmp_path / "fixtures"
    directory.mkdir(exist_ok=True)

    def write(trace: list[dict[str, Any]], name: str | None = None, **kwargs: Any) -> Path:
        data = fixture_dict(trace, **kwargs)
        path = directory / (name or f"{data['id']}.json")
        path.write_text(json.dumps(data, indent=2))
        return path

    return write
