from collections.abc import Iterator
from pathlib import Path

import pytest

from lorelab.memory import SqliteMemoryStore


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteMemoryStore]:
    with SqliteMemoryStore(tmp_path / "home" / "memory.db") as opened:
        yield opened


@pytest.fixture
def wordllama_store(tmp_path: Path) -> Iterator[SqliteMemoryStore]:
    """A store on WordLlama, whose frozen grading has a ``match`` tier (MiniLM's has none)."""
    with SqliteMemoryStore(tmp_path / "home" / "memory.db", embedding_model="wordllama") as opened:
        yield opened
