"""The shipped peer profiles against the peers' captured interfaces (data/peers/README.md):
argument names against each server's own tools/list, extractors against its real answers."""

import json
from pathlib import Path

import pytest

from lorelab.errors import PreflightError
from lorelab.evaluation.conditions._memory import PROFILES, conformance

PEERS = Path(__file__).parent / "data" / "peers"
CAPTURES = {
    "server-memory": "server-memory",
    "basic-memory": "basic-memory",
    "memorix": "memorix",
    "memory-keeper": "memory-keeper",
}
SEED = {
    "task": "parse_amount in shop/money.py turns '2.665' into 2.66.",
    "task_id": "seed-parse-half-up",
    "summary": "quantize to CENT with ROUND_HALF_UP",
    "outcome": "passed",
    "verification": {"command": "python -m pytest -q tests/test_money.py", "exit_code": 0},
    "files": ["shop/money.py"],
}


def _schemas(prefix):
    listing = json.loads((PEERS / f"{prefix}-tools.json").read_text(encoding="utf-8"))
    return {tool["name"]: tool["inputSchema"] for tool in listing["tools"]}


def _call(prefix, label):
    calls = json.loads((PEERS / f"{prefix}-calls.json").read_text(encoding="utf-8"))
    found = next(call for call in calls if call["label"] == label)
    text = "\n".join(found["text"])
    if found["structuredContent"] is not None:
        value = found["structuredContent"]
    else:
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = {"text": text}
    return found, value, text


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_each_peer_profile_conforms_to_its_servers_captured_tool_listing(name):
    conformance(PROFILES[name], _schemas(CAPTURES[name]))


def test_a_profile_sending_an_argument_the_server_does_not_declare_is_refused():
    schemas = _schemas("server-memory")
    schemas["create_entities"] = {"type": "object", "properties": {"items": {}}}
    with pytest.raises(PreflightError, match="sends entities to create_entities"):
        conformance(PROFILES["server-memory"], schemas)


def test_a_server_listing_no_record_tool_is_refused_by_its_own_tool_listing():
    schemas = _schemas("memory-keeper")
    del schemas["context_save"]
    with pytest.raises(PreflightError, match=r"lacks required tools: record \(context_save\)"):
        conformance(PROFILES["memory-keeper"], schemas)


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_each_peer_profile_builds_record_arguments_its_schema_accepts(name):
    profile = PROFILES[name]
    request = profile.request("record", SEED, {})
    schema = _schemas(CAPTURES[name])[profile.tool("record")]
    assert set(request) <= set(schema["properties"])
    assert set(schema.get("required", [])) <= set(request)
    # Two records of one task get two keys: a duplicate is overwritten, ignored or refused
    # by these servers, never stored twice.
    assert request != profile.request("record", SEED, {})


def test_server_memory_record_ids_come_from_the_created_entity_and_a_duplicate_yields_none():
    profile = PROFILES["server-memory"]
    _, value, text = _call("server-memory", "record exp-1")
    assert profile.decode_answer("record", value, text)["id"] == "exp-1"
    _, value, text = _call("server-memory", "record exp-1 again (duplicate name)")
    assert profile.decode_answer("record", value, text)["id"] is None


def test_server_memory_search_serves_each_entity_with_its_observations():
    profile = PROFILES["server-memory"]
    _, value, text = _call("server-memory", "query paraphrase (single keyword 'cents')")
    brief = profile.decode_answer("prepare", value, text)
    assert [item["id"] for item in brief["experiences"]] == ["exp-1"]
    assert "ROUND_HALF_UP" in brief["text"]
    _, value, text = _call("server-memory", "query paraphrase (full sentence)")
    empty = profile.decode_answer("prepare", value, text)
    assert empty["empty"] is True
    assert empty["text"] is None


def test_memorix_discard_is_a_refusal_and_a_store_yields_its_observation_number():
    profile = PROFILES["memorix"]
    _, value, text = _call("memorix", "store exp-1")
    assert profile.refusal("record", text) is None
    assert profile.decode_answer("record", value, text)["id"] == "1"
    _, _, discarded = _call("memorix", "store exp-2")
    assert "Formation DISCARD" in profile.refusal("record", discarded)


def test_memorix_search_is_followed_by_detail_on_the_refs_it_found():
    profile = PROFILES["memorix"]
    _, value, text = _call("memorix", "search after promote")
    brief = profile.decode_answer("prepare", value, text)
    assert [item["id"] for item in brief["experiences"]] == ["obs:1", "skill:1"]
    tool, arguments = profile.follow_up("prepare", brief)
    assert (tool, arguments) == ("memorix_detail", {"typedRefs": ["obs:1", "skill:1"]})
    _, _, detail = _call("memorix", "detail obs 1")
    merged = profile.merge_follow_up("prepare", brief, detail)
    assert "Narrative: task: parse_amount" in merged["text"]


def test_memory_keeper_search_items_are_read_from_its_text_answer():
    profile = PROFILES["memory-keeper"]
    _, value, text = _call("memory-keeper", "semantic paraphrase")
    brief = profile.decode_answer("prepare", value, text)
    assert [item["id"] for item in brief["experiences"]] == ["exp-2", "exp-3"]
    _, value, text = _call("memory-keeper", "save exp-1")
    assert profile.decode_answer("record", value, text)["id"] == "exp-1"


def test_basic_memory_search_and_write_are_read_from_structured_content():
    profile = PROFILES["basic-memory"]
    _, value, text = _call("basic-memory", "query unrelated (default)")
    brief = profile.decode_answer("prepare", value, text)
    assert brief["experiences"][0]["id"] == "main/experiences/exp-1"
    _, value, text = _call("basic-memory", "record exp-1")
    assert profile.decode_answer("record", value, text)["id"] == "main/experiences/exp-1"
    found, _, conflict = _call("basic-memory", "record exp-1 again (duplicate title)")
    assert found["isError"] is True
    assert profile.refusal("record", conflict) is not None
