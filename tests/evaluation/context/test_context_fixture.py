import hashlib
import json
import os
from pathlib import Path

import jsonschema
import pytest

from lorelab.errors import InputFileError, JSONInputError, PathError, SchemaError
from lorelab.evaluation.context import fixture_json_schema, load_fixture, parse_fixture
from lorelab.io import LIMITS
from tests.support.context_traces import ans, bnd, cmd, fixture_dict, msg, passing_trace

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "context"


def parse(data: dict, source: str = "fx.json"):
    return parse_fixture(json.dumps(data).encode(), source)


def test_a_fixture_file_loads_with_the_sha256_of_its_bytes(write_fixture):
    path = write_fixture(passing_trace())
    loaded = load_fixture(path)
    assert loaded.digest == hashlib.sha256(path.read_bytes()).hexdigest()
    assert loaded.fixture.id == "fx"
    assert loaded.path == str(path)


def test_an_index_repeated_in_a_child_trace_names_the_fixture_and_the_event():
    trace = [msg(0, "go", "user"), bnd(1, "child_handoff", [msg(0, "dup", "agent")])]
    with pytest.raises(SchemaError, match=r"^dup\.json: event 0 in a child trace: .*not unique"):
        parse(fixture_dict(trace), "dup.json")


def test_a_malformed_event_deep_in_a_child_trace_is_named_by_its_index():
    bad = {"index": 7, "author": "agent", "kind": "command", "command": "ls"}
    trace = [msg(0, "go", "user"), bnd(1, "child_handoff", [msg(2, "x", "agent"), bad])]
    with pytest.raises(SchemaError, match=r"^c\.json: event 7 \(.*exitCode\): Field required"):
        parse(fixture_dict(trace), "c.json")


@pytest.mark.parametrize(
    ("event", "message"),
    [
        (bnd(1, "child_handoff"), "needs a child trace"),
        ({**bnd(1, "restart"), "child": {"trace": [], "complete": True}}, "cannot carry a child"),
        ({"index": 1, "author": "agent", "kind": "thought", "text": "x"}, "does not match"),
        ({**ans(1), "author": "user"}, "written by the agent"),
        (ans(1, [("port", "1", []), ("port", "2", [])]), "states fact 'port' twice"),
        ({**msg(1, "x"), "index": -1}, "greater than or equal to 0"),
        ({**msg(1, "x"), "author": "robot"}, "author"),
        ({**cmd(1, "make"), "exitCode": "2"}, r"event 1 .*exitCode.*valid integer"),
        ({**msg(1, "x"), "index": True}, "valid integer"),
        ({**msg(1, "x"), "text": 5}, "valid string"),
    ],
)
def test_invalid_events_are_refused_with_the_event_named(event, message):
    data = fixture_dict([msg(0, "port = 5432"), event], expected=[])
    with pytest.raises(SchemaError, match=message) as info:
        parse(data)
    assert str(info.value).startswith("fx.json: ")


def test_expected_evidence_must_name_events_of_the_trace():
    data = fixture_dict(passing_trace(), expected=[{"id": "port", "value": "1", "evidence": [42]}])
    with pytest.raises(SchemaError, match="cites event 42, which is not in the trace"):
        parse(data)


def test_expected_facts_need_evidence_and_distinct_ids():
    no_evidence = fixture_dict(
        passing_trace(), expected=[{"id": "p", "value": "1", "evidence": []}]
    )
    with pytest.raises(SchemaError, match="evidence"):
        parse(no_evidence)
    twice = [{"id": "p", "value": "1", "evidence": [1]}] * 2
    with pytest.raises(SchemaError, match="listed twice"):
        parse(fixture_dict(passing_trace(), expected=twice))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"schemaVersion": 2}, "schemaVersion"),
        ({"requiredBoundaries": ["reboot"]}, "requiredBoundaries"),
        ({"forbiddenCommands": ["make", "make"]}, "listed twice"),
        ({"labels": {"expected": "MAYBE"}}, "labels"),
        ({"surprise": 1}, "surprise"),
        ({"usage": {"inputTokens": -1}}, "inputTokens"),
        ({"usage": {"costUSD": 1e308}}, "usage.costUSD: Input should be less than or equal to"),
        ({"usage": {"inputTokens": 10**12 + 1}}, "usage.inputTokens"),
        ({"usage": {"outputTokens": 10**15}}, "usage.outputTokens"),
        ({"usage": {"wallMs": 10**13}}, "usage.wallMs"),
    ],
)
def test_invalid_top_level_fields_are_refused(change, message):
    with pytest.raises(SchemaError, match=message):
        parse({**fixture_dict(passing_trace()), **change})


def test_missing_usage_is_all_unknown_not_zero():
    data = fixture_dict(passing_trace())
    del data["usage"]
    usage = parse(data).usage
    assert (usage.input_tokens, usage.output_tokens, usage.cost_usd, usage.wall_ms) == (
        None,
        None,
        None,
        None,
    )


def test_strict_json_is_required(tmp_path):
    path = tmp_path / "dup.json"
    path.write_text('{"id": "a", "id": "b"}')
    with pytest.raises(JSONInputError, match="duplicate key"):
        load_fixture(path)


def test_a_directory_or_fifo_is_refused(tmp_path):
    with pytest.raises(InputFileError, match="directory"):
        load_fixture(tmp_path)
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    with pytest.raises(InputFileError, match="FIFO"):
        load_fixture(fifo)


def test_the_bounded_reader_cannot_be_switched_by_replacing_the_path(write_fixture, monkeypatch):
    original = write_fixture(passing_trace(), name="fx.json", fixture_id="original")
    impostor = write_fixture(passing_trace(), name="impostor.json", fixture_id="impostor")
    original_bytes = original.read_bytes()
    real_read = os.read
    swapped = []

    def read_then_swap(fd: int, n: int) -> bytes:
        if not swapped:
            os.replace(impostor, original)  # the path now names another file
            swapped.append(True)
        return real_read(fd, n)

    monkeypatch.setattr(os, "read", read_then_swap)
    loaded = load_fixture(original)
    monkeypatch.undo()
    assert swapped
    assert loaded.fixture.id == "original"
    assert loaded.digest == hashlib.sha256(original_bytes).hexdigest()
    assert json.loads(original.read_bytes())["id"] == "impostor"


def test_a_fixture_growing_past_its_budget_while_read_is_refused(write_fixture, monkeypatch):
    path = write_fixture(passing_trace())
    budget = path.stat().st_size + 10
    monkeypatch.setitem(LIMITS, "fixture", budget)
    real_read = os.read
    grown = []

    def read_then_grow(fd: int, n: int) -> bytes:
        if not grown:
            with open(path, "ab") as handle:
                handle.write(b" " * 100)
            grown.append(True)
        return real_read(fd, n)

    monkeypatch.setattr(os, "read", read_then_grow)
    with pytest.raises(InputFileError, match="grew past the fixture limit"):
        load_fixture(path)


def test_a_fixture_over_32_mib_is_refused_before_reading(tmp_path):
    path = tmp_path / "big.json"
    with open(path, "wb") as handle:
        handle.truncate(32 * 1024 * 1024 + 1)  # sparse: costs no disk
    with pytest.raises(InputFileError, match="exceeds the fixture limit of 33554432"):
        load_fixture(path)


def test_the_exported_schema_accepts_the_examples_and_rejects_a_broken_fixture():
    schema = fixture_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    examples = sorted(EXAMPLES.glob("*.json"))
    assert examples
    for example in examples:
        validator.validate(json.loads(example.read_text()))
    broken = fixture_dict([cmd(0, "ls")])
    del broken["trace"][0]["exitCode"]
    assert not validator.is_valid(broken)


def test_every_example_loads_and_its_label_names_its_directory():
    for example in sorted(EXAMPLES.glob("*.json")):
        loaded = load_fixture(example)
        expected = "PASS" if example.name.startswith("pass-") else "FAIL"
        assert loaded.fixture.labels.expected == expected, example.name


def test_usage_at_its_maxima_is_accepted():
    data = fixture_dict(
        passing_trace(),
        usage={"inputTokens": 10**12, "outputTokens": 10**12, "costUSD": 1e9, "wallMs": 10**12},
    )
    assert parse(data).usage.cost_usd == 1e9


def test_a_fixture_path_that_is_not_utf8_is_a_path_error(tmp_path):
    path = os.fsencode(tmp_path) + b"/f\xff.json"
    with open(path, "w") as handle:
        json.dump(fixture_dict(passing_trace()), handle)
    with pytest.raises(PathError, match="not valid UTF-8"):
        load_fixture(os.fsdecode(path))
