"""Fixtures for the worker tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def trial(tmp_path: Path) -> Path:
    """A fresh trial directory."""
    path = tmp_path / "trial"
    path.mkdir()
    return path
