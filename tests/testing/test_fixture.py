"""The protocol fixture worker: the requirements grammar, case patterns from lessons, each role,
invalid payloads, and the real program (``python -m lorelab.testing.fixture``)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lorelab.errors import OutcomeFailure, SchemaError, UsageError
from lorelab.testing.fixture import (
    answer,
    is_case_pattern,
    lesson_test_names,
    parse_requirements,
)
from lorelab.workers import adapter_argv, call_worker, validate_response
from lorelab.workspace import FileEntry

REQUIREMENTS = """\
Clamp a number.

clamp(value, low, high) returns value limited to [low, high].

Examples:
- clamp(5, 0, 3) == 3
- clamp(-2, 0, 3) == 0
- clamp(1, 3, 0) raises ValueError
Edge cases:
- [boundary] clamp(3, 0, 3) == 3
- [zero-width] clamp(7, 4, 4) == 4
- [unicode] clamp(1, 0, 2) == 1
"""

SOURCE = """\
def clamp(value, low, high):
    if low > high:
        raise ValueError("empty range")
    return min(max(value, low), high)
"""

LESSON_TESTS = """\
from src.past import past


def test_past_at_boundary():
    assert past(1) == 1


def test_past_zero_width_input():
    assert past(0) == 0
"""


def _task(runner: str = "pytest", requirements: str = REQUIREMENTS) -> dict[str, Any]:
    path = "src/clamp.py" if runner == "pytest" else "src/clamp.js"
    return {
        "specificationId": "clamp",
        "requirements": requirements,
        "runner": runner,
        "source": [{"path": path, "content": SOURCE}],
    }


def _lesson(content: str = LESSON_TESTS, path: str = "tests/test_past.py") -> dict[str, Any]:
    return {
        "id": "lesson-1",
        "specificationId": "past",
        "requirements": "Past requirements.",
        "tests": [{"path": path, "content": content}],
        "score": 0.9,
    }


def _architect(lessons: list[dict[str, Any]], max_cases: int = 20, **task: Any) -> dict[str, Any]:
    return {
        "protocol": "lorelab.worker/1",
        "role": "architect",
        "task": _task(**task),
        "lessons": lessons,
        "limits": {"maxCases": max_cases},
    }


def _author(
    lessons: list[dict[str, Any]],
    cases: list[dict[str, str]],
    max_cases: int = 20,
    max_files: int = 2,
    **task: Any,
) -> dict[str, Any]:
    return {
        "protocol": "lorelab.worker/1",
        "role": "author",
        "task": _task(**task),
        "lessons": lessons,
        "plan": {"cases": cases},
        "limits": {"maxFiles": max_files, "maxCases": max_cases},
    }


def _reviewer(tests: list[dict[str, str]], runner: str = "pytest") -> dict[str, Any]:
    return {
        "protocol": "lorelab.worker/1",
        "role": "reviewer",
        "task": _task(runner),
        "tests": tests,
    }


def _run_program(stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "lorelab.testing.fixture"],
        input=stdin,
        capture_output=True,
        timeout=60,
        check=False,
    )


def _test_functions(content: str) -> list[str]:
    tree = ast.parse(content)
    return [node.name for node in tree.body if isinstance(node, ast.FunctionDef)]


# --- the grammar ---------------------------------------------------------------------------


def test_examples_and_tagged_edge_cases_are_parsed_in_order():
    items = parse_requirements(REQUIREMENTS, "pytest")
    assert [(item.section, item.tag, item.text) for item in items] == [
        ("example", None, "clamp(5, 0, 3) == 3"),
        ("example", None, "clamp(-2, 0, 3) == 0"),
        ("example", None, "clamp(1, 3, 0) raises ValueError"),
        ("edge", "boundary", "clamp(3, 0, 3) == 3"),
        ("edge", "zero-width", "clamp(7, 4, 4) == 4"),
        ("edge", "unicode", "clamp(1, 0, 2) == 1"),
    ]
    raises = items[2]
    assert (raises.expression, raises.expected, raises.error) == (
        "clamp(1, 3, 0)",
        None,
        "ValueError",
    )


def test_unusable_items_and_prose_bullets_are_skipped():
    requirements = """\
- prose bullet before any header == not an item
Examples:
- f("a == b") == "a == b"
- f(1 == 1
- f(1) == 2 == 3
- just words here
- [tag] g(1) == 1
Some prose ends the section.
- f(9) == 9
Edge cases:
- h(2) == 2
- [empty] h("") == ""
"""
    items = parse_requirements(requirements, "pytest")
    assert [(item.section, item.tag, item.expression, item.expected) for item in items] == [
        ("example", None, 'f("a == b")', '"a == b"'),
        ("example", None, "g(1)", "1"),
        ("edge", "empty", 'h("")', '""'),
    ]


def test_node_items_are_javascript_and_need_only_balanced_brackets():
    requirements = 'Examples:\n- add([1, 2]) == 3\n- parse("x") raises RangeError\n'
    items = parse_requirements(requirements, "node")
    assert [(item.expression, item.expected, item.error) for item in items] == [
        ("add([1, 2])", "3", None),
        ('parse("x")', None, "RangeError"),
    ]


@pytest.mark.parametrize(
    ("tag", "matches"),
    [
        ("boundary", True),
        ("upper", True),
        ("limit", True),
        ("boundary_upper", True),
        ("boundary-upper", True),
        ("bound", False),
        ("upper_lim", False),
        ("test", False),
    ],
)
def test_a_tag_is_a_case_pattern_when_a_test_name_contains_or_ends_with_it(tag: str, matches: bool):
    assert is_case_pattern(tag, ["test_boundary_upper_limit"]) is matches


def test_lesson_test_names_come_from_python_defs_and_javascript_titles():
    names = lesson_test_names(
        [
            FileEntry(path="tests/test_a.py", content=LESSON_TESTS + "\nasync def testlike():\n"),
            FileEntry(
                path="test/b.test.js",
                content="test('Empty  Input', () => {});\nit(\"at boundary\", () => {});\n",
            ),
        ]
    )
    assert names == [
        "test_past_at_boundary",
        "test_past_zero_width_input",
        "testlike",
        "test_empty_input",
        "test_at_boundary",
    ]


@pytest.mark.parametrize(
    ("literal", "name"),
    [
        ('"boundary value"', "test_boundary_value"),
        ("'Zero-width range (edge)'", "test_zero_width_range_edge"),
        ('"  x\\t y  "', "test_x_y"),
        ("'don\\'t stop'", "test_don_t_stop"),
        ("`test it`", "test_test_it"),
        ('"!!!"', "test"),
    ],
)
def test_a_node_test_title_is_read_as_the_pytest_name_test_title(literal: str, name: str):
    content = f"test({literal}, () => {{}});\n"
    assert lesson_test_names([FileEntry(path="test/a.test.js", content=content)]) == [name]


def test_the_first_word_of_a_node_test_title_is_a_case_pattern():
    lesson = _lesson(
        'const test = require("node:test");\n'
        'test("boundary values clamp to the range", () => {});\n'
        'it("zero-width ranges", () => {});\n',
        path="test/past.test.js",
    )
    response = answer(_architect([lesson], runner="node"))
    edge = [case["intent"] for case in response["cases"] if case["intent"].startswith("[")]
    assert edge == ["[boundary] clamp(3, 0, 3) == 3", "[zero-width] clamp(7, 4, 4) == 4"]


# --- architect -----------------------------------------------------------------------------


def test_architect_without_lessons_plans_one_case_per_example():
    response = answer(_architect([]))
    assert response == {
        "evidenceKind": "protocol-fixture",
        "cases": [
            {"name": "example_1", "intent": "clamp(5, 0, 3) == 3"},
            {"name": "example_2", "intent": "clamp(-2, 0, 3) == 0"},
            {"name": "example_3", "intent": "clamp(1, 3, 0) raises ValueError"},
        ],
    }


def test_architect_with_lessons_adds_the_edge_cases_whose_tags_are_lesson_patterns():
    response = answer(_architect([_lesson()]))
    names = [case["name"] for case in response["cases"]]
    assert names == ["example_1", "example_2", "example_3", "edge_boundary_1", "edge_zero_width_2"]
    assert response["cases"][3]["intent"] == "[boundary] clamp(3, 0, 3) == 3"
    assert all(name.isidentifier() for name in names)
    assert len(set(names)) == len(names)


def test_architect_respects_max_cases_keeping_examples_first():
    response = answer(_architect([_lesson()], max_cases=2))
    assert [case["name"] for case in response["cases"]] == ["example_1", "example_2"]


def test_architect_response_passes_the_protocol_validation_with_its_payload():
    payload = _architect([_lesson()])
    validate_response("architect", answer(payload), payload=payload)


def test_architect_without_usable_examples_cannot_answer():
    with pytest.raises(OutcomeFailure, match="no usable examples"):
        answer(_architect([], requirements="Just prose, no examples."))


# --- author --------------------------------------------------------------------------------


def test_author_writes_one_pytest_file_importing_from_the_module_under_test():
    plan = answer(_architect([]))["cases"]
    response = answer(_author([], plan))
    assert response["evidenceKind"] == "protocol-fixture"
    assert "usage" not in response
    assert "model" not in response
    [file] = response["files"]
    assert file["path"] == "tests/test_clamp.py"
    content = file["content"]
    assert "from src.clamp import clamp\n" in content
    assert "import pytest\n" in content
    assert "    assert clamp(5, 0, 3) == 3\n" in content
    assert "    with pytest.raises(ValueError):\n        clamp(1, 3, 0)\n" in content
    assert _test_functions(content) == ["test_example_1", "test_example_2", "test_example_3"]


def test_lessons_change_the_authors_output_for_the_same_plan():
    plan = answer(_architect([]))["cases"]
    without = answer(_author([], plan))["files"][0]["content"]
    with_lessons = answer(_author([_lesson()], plan))["files"][0]["content"]
    assert without != with_lessons
    assert _test_functions(with_lessons) == [
        *_test_functions(without),
        "test_edge_boundary_1",
        "test_edge_zero_width_2",
    ]
    assert "clamp(3, 0, 3) == 3" in with_lessons
    assert "clamp(1, 0, 2)" not in with_lessons  # [unicode] is no pattern of the lesson


def test_lessons_whose_names_share_no_tag_add_nothing():
    plan = answer(_architect([]))["cases"]
    unrelated = _lesson("def test_something_else():\n    pass\n")
    assert answer(_author([unrelated], plan)) == answer(_author([], plan))


def test_author_writes_the_plans_cases_under_the_plans_names():
    plan = [{"name": "Upper limit!", "intent": "clamp(9, 0, 3) == 3"}]
    content = answer(_author([], plan))["files"][0]["content"]
    assert _test_functions(content) == ["test_upper_limit"]
    assert "assert clamp(9, 0, 3) == 3" in content


def test_author_falls_back_to_the_requirements_when_no_plan_case_reads_as_an_example():
    plan = [{"name": "prose", "intent": "check that large values are clamped"}]
    content = answer(_author([], plan))["files"][0]["content"]
    assert _test_functions(content) == ["test_example_1", "test_example_2", "test_example_3"]


def test_author_respects_max_cases():
    plan = answer(_architect([_lesson()]))["cases"]
    payload = _author([_lesson()], plan, max_cases=2)
    response = answer(payload)
    assert len(_test_functions(response["files"][0]["content"])) == 2
    validate_response("author", response, payload=payload)


def test_authored_pytest_file_passes_with_real_pytest_on_the_source(tmp_path: Path):
    plan = answer(_architect([_lesson()]))["cases"]
    [file] = answer(_author([_lesson()], plan))["files"]
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "clamp.py").write_text(SOURCE)
    (tmp_path / "tests").mkdir()
    (tmp_path / file["path"]).write_text(file["content"])
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=tmp_path,
        capture_output=True,
        timeout=60,
        check=False,
        env={"PATH": "/usr/bin:/bin", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
    )
    assert completed.returncode == 0, completed.stdout.decode()
    assert b"5 passed" in completed.stdout


def test_author_writes_node_test_files_that_node_runs(tmp_path: Path):
    requirements = (
        "Examples:\n- clamp(5, 0, 3) == 3\n- clamp(1, 3, 0) raises RangeError\n"
        "Edge cases:\n- [boundary] clamp(3, 0, 3) == 3\n"
    )
    source = (
        "function clamp(value, low, high) {\n"
        '  if (low > high) throw new RangeError("empty range");\n'
        "  return Math.min(Math.max(value, low), high);\n"
        "}\nmodule.exports = { clamp };\n"
    )
    payload = _author([_lesson()], [], runner="node", requirements=requirements)
    payload["task"]["source"] = [{"path": "src/clamp.js", "content": source}]
    [file] = answer(payload)["files"]
    assert file["path"] == "test/clamp.test.js"
    assert 'const { clamp } = require("../src/clamp.js");' in file["content"]
    assert 'test("edge_boundary_1", () => {' in file["content"]
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "clamp.js").write_text(source)
    (tmp_path / "test").mkdir()
    (tmp_path / file["path"]).write_text(file["content"])
    completed = subprocess.run(
        ["node", "--test", file["path"]],
        cwd=tmp_path,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout.decode()
    assert b"# pass 3" in completed.stdout
    review = answer(_reviewer([file], runner="node"))
    assert review["verdict"] == "approve"


def test_author_without_a_canonical_source_file_cannot_answer():
    payload = _author([], [])
    payload["task"]["source"] = [{"path": "lib/clamp.py", "content": SOURCE}]
    with pytest.raises(OutcomeFailure, match="no canonical pytest source file"):
        answer(payload)


# --- reviewer ------------------------------------------------------------------------------


def test_reviewer_approves_the_authors_tests():
    plan = answer(_architect([]))["cases"]
    files = answer(_author([], plan))["files"]
    response = answer(_reviewer(files))
    assert response == {
        "evidenceKind": "protocol-fixture",
        "verdict": "approve",
        "reasons": ["tests/test_clamp.py: parses and defines 3 test(s)"],
    }


@pytest.mark.parametrize(
    ("tests", "reason"),
    [
        ([], "no test files were given"),
        (
            [{"path": "src/test_clamp.py", "content": "def test_a():\n    pass\n"}],
            "src/test_clamp.py: not a canonical pytest test path",
        ),
        (
            [{"path": "tests/test_clamp.py", "content": "def test_a(:\n"}],
            "tests/test_clamp.py: does not parse as Python (line 1",
        ),
        (
            [{"path": "tests/test_clamp.py", "content": "def helper():\n    pass\n"}],
            "tests/test_clamp.py: defines no test",
        ),
    ],
)
def test_reviewer_rejects_with_a_reason_for_each_problem(tests: list[dict[str, str]], reason: str):
    response = answer(_reviewer(tests))
    assert response["verdict"] == "reject"
    assert any(item.startswith(reason) for item in response["reasons"]), response["reasons"]


def test_reviewer_rejects_every_bad_file_and_not_only_the_first():
    tests = [
        {"path": "tests/test_a.py", "content": "x = (\n"},
        {"path": "tests/test_b.py", "content": "def test_b():\n    pass\n"},
        {"path": "tests/test_c.py", "content": "y = 1\n"},
    ]
    response = answer(_reviewer(tests))
    assert response["verdict"] == "reject"
    assert [reason.split(":")[0] for reason in response["reasons"]] == [
        "tests/test_a.py",
        "tests/test_c.py",
    ]


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ('test("a", () => {\n', "unclosed '{'"),
        ('test("a", () => { ]);\n', "unbalanced ']'"),
        ('const s = "open;\ntest("a", () => {});\n', "unterminated string on line 1"),
        ("/* never closed\n", "unterminated block comment"),
        ("const x = 1; // test(\n", "defines no test"),
    ],
)
def test_reviewer_rejects_javascript_that_fails_the_basic_check(content: str, reason: str):
    response = answer(_reviewer([{"path": "test/clamp.test.js", "content": content}], "node"))
    assert response["verdict"] == "reject"
    assert reason in response["reasons"][0]


def test_reviewer_never_takes_lessons():
    payload = _reviewer([{"path": "tests/test_a.py", "content": "def test_a():\n    pass\n"}])
    payload["lessons"] = [_lesson()]
    with pytest.raises(SchemaError, match="lessons"):
        answer(payload)


# --- invalid payloads ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "error"),
    [
        ([1, 2], "expected one JSON object"),
        ({"protocol": "lorelab.worker/1"}, "role None is not answered"),
        ({"protocol": "lorelab.worker/1", "role": "host"}, "role 'host' is not answered"),
        ({**_architect([]), "protocol": "lorelab.worker/2"}, "protocol"),
        ({key: v for key, v in _architect([]).items() if key != "limits"}, "limits"),
    ],
)
def test_invalid_payloads_are_refused_in_process(payload: Any, error: str):
    with pytest.raises((UsageError, SchemaError), match=error):
        answer(payload)


@pytest.mark.parametrize(
    ("stdin", "fragment"),
    [
        (b"not json", "invalid JSON"),
        (b"", "invalid JSON"),
        (b'{"role": "author"', "invalid JSON"),
        (b'{"role": "host", "protocol": "lorelab.worker/1"}', "role 'host'"),
        (json.dumps({"role": "reviewer", "protocol": "lorelab.worker/1"}).encode(), "task"),
    ],
)
def test_the_program_refuses_an_invalid_payload_with_one_stderr_line(stdin: bytes, fragment: str):
    completed = _run_program(stdin)
    assert completed.returncode == 2
    assert completed.stdout == b""
    lines = completed.stderr.decode().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("lorelab fixture: ")
    assert fragment in lines[0]
    assert "Traceback" not in completed.stderr.decode()


def test_the_program_answers_one_payload_with_one_json_object():
    completed = _run_program(json.dumps(_architect([_lesson()])).encode())
    assert completed.returncode == 0, completed.stderr.decode()
    assert completed.stderr == b""
    assert completed.stdout.endswith(b"\n")
    assert completed.stdout.count(b"\n") == 1
    response = json.loads(completed.stdout)
    assert response == answer(_architect([_lesson()]))


def test_the_program_exits_1_when_it_cannot_answer():
    completed = _run_program(json.dumps(_architect([], requirements="No examples.")).encode())
    assert completed.returncode == 1
    assert completed.stdout == b""
    assert completed.stderr.decode().strip() == (
        "lorelab fixture: architect: the requirements state no usable examples"
    )


def test_the_fixture_answers_through_the_real_transport_with_unknown_usage(tmp_path: Path):
    call = call_worker(adapter_argv("fixture"), "architect", _architect([]), cwd=tmp_path)
    assert call.ok, call.receipt.failure_detail
    assert call.receipt.evidence_kind == "protocol-fixture"
    assert call.receipt.usage is None
    assert call.receipt.model.claimed is None
    assert call.response is not None
    assert [case["name"] for case in call.response["cases"]] == [
        "example_1",
        "example_2",
        "example_3",
    ]
