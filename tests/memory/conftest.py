from collections.abc import Iterator
from pathlib import Path

import pytest

from lorelab.memory import SqliteMemoryStore


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteMemoryStore]:
    with SqliteMemoryStore(tmp_path / "home" / "memory.db") as opened:
        yield opened
