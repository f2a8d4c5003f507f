"""The tools' JSON schemas come from the models, through a cache keyed by the code."""

import json
import sys
import types
from pathlib import Path

import pytest

from lorelab._cache import CACHE_ENV
from lorelab.mcp import _schemas
from lorelab.mcp._server import build_server
from lorelab.memory import OPERATIONS, SqliteMemoryStore


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    where = tmp_path / "cache"
    monkeypatch.setenv(CACHE_ENV, str(where))
    return where


def _served(allow_checks: bool) -> list:
    return [e for e in OPERATIONS if e.tool is not None and (allow_checks or not e.needs_consent)]


def _listed(tmp_path: Path, *, allow_checks: bool = False) -> list[dict]:
    with SqliteMemoryStore(tmp_path / "home" / "memory.db") as store:
        server = build_server(store, tmp_path, tmp_path, allow_checks=allow_checks)
        return [tool.model_dump(mode="json", by_alias=True) for tool in server.tools]


def test_the_listed_schemas_are_the_models_schemas_whether_cached_or_not(tmp_path, cache):
    first = _listed(tmp_path)
    (written,) = cache.glob("mcp-tools-*.json")
    again = _listed(tmp_path)
    assert again == first
    generated = _schemas.generate(_served(False))
    for tool in again:
        assert tool["inputSchema"] == generated[tool["name"]]["input"]
        assert tool["outputSchema"] == generated[tool["name"]]["output"]
    assert json.loads(written.read_text()) == generated


def test_the_tools_served_with_consent_have_their_own_entry(tmp_path, cache):
    without = {tool["name"] for tool in _listed(tmp_path)}
    with_checks = {tool["name"] for tool in _listed(tmp_path, allow_checks=True)}
    assert with_checks - without == {"lore_check_candidate"}
    assert len(list(cache.glob("mcp-tools-*.json"))) == 2


@pytest.mark.parametrize(
    "content",
    [
        b"not json",
        b'{"lore_record": {"input": {}, "output": {}}}',  # other tools than those served
        b"[]",
    ],
)
def test_a_damaged_cache_entry_is_regenerated_not_served(tmp_path, cache, content):
    _listed(tmp_path)
    (written,) = cache.glob("mcp-tools-*.json")
    written.write_bytes(content)
    listed = _listed(tmp_path)
    generated = _schemas.generate(_served(False))
    assert {tool["name"]: tool["inputSchema"] for tool in listed} == {
        name: schema["input"] for name, schema in generated.items()
    }
    assert json.loads(written.read_text()) == generated


def test_a_changed_lorelab_source_file_changes_the_key(tmp_path, monkeypatch):
    source = tmp_path / "models.py"
    source.write_text("x = 1\n")
    module = types.ModuleType("lorelab._schema_key_probe")
    module.__file__ = str(source)
    monkeypatch.setitem(sys.modules, module.__name__, module)
    served = _served(False)
    before = _schemas.cache_key(served)
    assert _schemas.cache_key(served) == before
    source.write_text("x = 2\n")
    assert _schemas.cache_key(served) != before


def test_an_unwritable_cache_directory_still_serves_the_schemas(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv(CACHE_ENV, str(blocker / "cache"))
    assert len(_listed(tmp_path)) == len(_served(False))
