from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from lorelab.memory import DEFAULT_POLICY, RelevancePolicy, SqliteMemoryStore
from lorelab.memory._embedders import WORDLLAMA

WITH_MATCH = replace(DEFAULT_POLICY.grading_for(WORDLLAMA.model_id), match=0.875)
"""WordLlama's frozen weights with a fixed match threshold (0.875, the one it had under the
first utility): a rule with a match tier that does not move when the bundled rules are
refitted, so the tests of what a match and a related item look like stay put."""


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteMemoryStore]:
    with SqliteMemoryStore(tmp_path / "home" / "memory.db") as opened:
        yield opened


@pytest.fixture
def match_store(tmp_path: Path) -> Iterator[SqliteMemoryStore]:
    """A WordLlama store graded by :data:`WITH_MATCH`, whose rule has a ``match`` tier."""
    policy = RelevancePolicy(grading=WITH_MATCH)
    with SqliteMemoryStore(
        tmp_path / "home" / "memory.db", embedding_model="wordllama", policy=policy
    ) as opened:
        yield opened
