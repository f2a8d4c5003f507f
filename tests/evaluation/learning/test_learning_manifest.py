"""The learning manifest: its shape, and every rule ``validate_manifest`` enforces (exit 2)."""

from __future__ import annotations

import copy
import json
import keyword
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lorelab.errors import InputFileError, JSONInputError, SchemaError
from lorelab.evaluation.learning.manifest import (
    Defect,
    LearningManifest,
    declared_cases,
    find_violations,
    is_source_path,
    is_test_path,
    load_manifest,
    validate_manifest,
)
from lorelab.workspace import FileEntry, canonical_path


def _source(name: str, value: int) -> dict[str, str]:
    return {"path": f"src/{name}.py", "content": f"def {name}():\n    return {value}\n"}


def _tests(name: str, value: int) -> dict[str, str]:
    return {
        "path": f"tests/test_{name}.py",
        "content": (
            f"from src.{name} import {name}\n\n\n"
            f"def test_{name}_value():\n    assert {name}() == {value}\n\n\n"
            f"def test_{name}_type():\n    assert isinstance({name}(), int)\n"
        ),
    }


def _fixture(name: str, value: int) -> dict[str, Any]:
    return {
        "id": name,
        "requirements": f"{name}() returns {value}.\n\nExamples:\n- {name}() == {value}\n",
        "files": [_source(name, value)],
        "referenceTests": [_tests(name, value)],
        "defects": [
            {
                "id": f"{name}-wrong-value",
                "label": "returns the wrong number",
                "files": [_source(name, value + 1000)],
                "expectedFailingCases": [f"tests/test_{name}.py::test_{name}_value"],
            }
        ],
    }


def _history(name: str, value: int) -> dict[str, Any]:
    return {
        "id": f"history-{name}",
        "specificationId": name,
        "requirements": f"Past: {name}() returns {value}.",
        "files": [_source(name, value)],
        "tests": [_tests(name, value)],
    }


def _manifest() -> dict[str, Any]:
    return {
        "schemaVersion": 1,
        "id": "tiny",
        "runner": "pytest",
        "history": [_history("past", 7)],
        "fixtures": [_fixture("alpha", 1), _fixture("beta", 2)],
    }


def _write(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _refused(tmp_path: Path, data: Any, *fragments: str) -> str:
    """Load ``data`` from a file; assert one SchemaError (exit 2) naming every fragment."""
    with pytest.raises(SchemaError) as caught:
        load_manifest(_write(tmp_path, data))
    message = str(caught.value)
    assert caught.value.exit_code == 2
    assert "\n" not in message
    assert message.startswith(str(tmp_path / "manifest.json"))
    for fragment in fragments:
        assert fragment in message, message
    return message


# --- the shape -----------------------------------------------------------------------------


def test_a_valid_manifest_loads_with_camel_case_keys(tmp_path: Path):
    manifest = load_manifest(_write(tmp_path, _manifest()))
    assert manifest.fixtures[0].reference_tests[0].path == "tests/test_alpha.py"
    assert manifest.fixtures[0].defects[0].expected_failing_cases == [
        "tests/test_alpha.py::test_alpha_value"
    ]
    dumped = manifest.model_dump(mode="json", by_alias=True, exclude_none=True)
    assert dumped == _manifest()


def test_a_schema_version_other_than_1_is_refused(tmp_path: Path):
    data = _manifest() | {"schemaVersion": 2}
    _refused(tmp_path, data, "schemaVersion")


def test_an_unknown_key_such_as_a_setup_command_is_refused(tmp_path: Path):
    data = _manifest()
    data["fixtures"][0]["setup"] = "pip install requests"
    _refused(tmp_path, data, "fixtures.0.setup", "Extra inputs are not permitted")


def test_a_runner_other_than_pytest_or_node_is_refused(tmp_path: Path):
    _refused(tmp_path, _manifest() | {"runner": "jest"}, "runner")


def test_a_manifest_over_two_mebibytes_is_refused_by_the_bounded_reader(tmp_path: Path):
    data = _manifest()
    data["fixtures"][0]["requirements"] = "x" * (2 * 1024 * 1024)
    with pytest.raises(InputFileError, match="manifest limit"):
        load_manifest(_write(tmp_path, data))


def test_a_lone_surrogate_in_the_json_is_refused(tmp_path: Path):
    path = tmp_path / "manifest.json"
    text = json.dumps(_manifest()).replace('"Past:', '"\\ud800Past:')
    path.write_text(text, encoding="utf-8")
    with pytest.raises(JSONInputError, match="surrogate"):
        load_manifest(path)


# --- limits --------------------------------------------------------------------------------


def test_more_than_eight_histories_are_refused(tmp_path: Path):
    data = _manifest()
    data["history"] = [_history(f"past{index}", index) for index in range(9)]
    _refused(tmp_path, data, "history", "at most 8")


def test_more_than_twelve_specifications_are_refused(tmp_path: Path):
    data = _manifest()
    data["fixtures"] = [_fixture(f"spec{index}", index) for index in range(13)]
    _refused(tmp_path, data, "fixtures", "at most 12")


def test_twelve_specifications_and_eight_histories_are_allowed(tmp_path: Path):
    data = _manifest()
    data["fixtures"] = [_fixture(f"spec{index}", index) for index in range(12)]
    data["history"] = [_history(f"past{index}", 100 + index) for index in range(8)]
    assert len(load_manifest(_write(tmp_path, data)).fixtures) == 12


def test_more_than_eight_defects_per_specification_are_refused(tmp_path: Path):
    data = _manifest()
    template = data["fixtures"][0]["defects"][0]
    data["fixtures"][0]["defects"] = [
        template | {"id": f"alpha-d{index}", "files": [_source("alpha", 50 + index)]}
        for index in range(9)
    ]
    _refused(tmp_path, data, "fixtures.0.defects", "at most 8")


def test_a_fixture_without_defects_is_refused(tmp_path: Path):
    data = _manifest()
    data["fixtures"][0]["defects"] = []
    _refused(tmp_path, data, "fixtures.0.defects")


# --- canonical paths and forbidden files ---------------------------------------------------


@pytest.mark.parametrize(
    ("where", "path", "fragment"),
    [
        ("files", "lib/alpha.py", "not a canonical source path for runner pytest"),
        ("files", "src/Alpha.py", "not a canonical source path"),
        ("files", "src/class.py", "not a canonical source path"),
        ("files", "src/pkg/alpha.py", "not a canonical source path"),
        ("files", "src/alpha.js", "not a canonical source path"),
        ("referenceTests", "tests/alpha_test.py", "not a canonical test path for runner pytest"),
        ("referenceTests", "test/alpha.test.js", "not a canonical test path"),
        ("referenceTests", "tests/test_alpha.txt", "not a canonical test path"),
    ],
)
def test_a_path_outside_the_canonical_shapes_is_refused(
    tmp_path: Path, where: str, path: str, fragment: str
):
    data = _manifest()
    data["fixtures"][0][where][0]["path"] = path
    _refused(tmp_path, data, "fixture 'alpha'", where, repr(path), fragment)


@pytest.mark.parametrize(
    "path",
    [
        "package.json",
        "requirements.txt",
        "requirements-dev.txt",
        "pyproject.toml",
        "setup.py",
        "tests/conftest.py",
        "pytest.ini",
        "src/install.sh",
    ],
)
def test_manifests_dependency_installs_and_runner_configuration_are_refused(
    tmp_path: Path, path: str
):
    data = _manifest()
    data["fixtures"][0]["files"].append({"path": path, "content": "x"})
    _refused(tmp_path, data, "fixture 'alpha' files", repr(path), "only source and test files")


def test_a_path_with_dot_dot_is_refused_by_the_file_entry(tmp_path: Path):
    data = _manifest()
    data["fixtures"][0]["files"][0]["path"] = "src/../alpha.py"
    _refused(tmp_path, data, "fixtures.0.files.0.path", "'..'")


def test_a_history_test_outside_the_test_shape_is_refused(tmp_path: Path):
    data = _manifest()
    data["history"][0]["tests"][0]["path"] = "src/test_past.py"
    _refused(tmp_path, data, "history 'history-past' tests", "not a canonical test path")


def test_binary_content_with_nul_is_refused(tmp_path: Path):
    data = _manifest()
    data["fixtures"][1]["files"][0]["content"] += "\x00"
    _refused(tmp_path, data, "fixture 'beta' files", "NUL")


def test_a_lone_surrogate_in_a_model_built_in_python_is_a_violation():
    manifest = LearningManifest.model_validate(_manifest())
    broken = manifest.fixtures[0].model_copy(
        update={"files": [FileEntry(path="src/alpha.py", content="def alpha():\n    '\ud800'\n")]}
    )
    manifest = manifest.model_copy(update={"fixtures": [broken, manifest.fixtures[1]]})
    assert any("not valid UTF-8" in problem for problem in find_violations(manifest))


def test_two_paths_that_differ_only_by_case_are_refused(tmp_path: Path):
    data = _manifest()
    data["fixtures"][0]["files"].append({"path": "src/alpha.py", "content": "x = 1\n"})
    _refused(tmp_path, data, "fixture 'alpha' files", "collide")


def test_node_manifests_need_node_paths_and_name_cases_by_test_title(tmp_path: Path):
    data = {
        "schemaVersion": 1,
        "id": "node-tiny",
        "runner": "node",
        "history": [],
        "fixtures": [
            {
                "id": "sum",
                "requirements": "sum(a, b) adds.",
                "files": [{"path": "src/sum.js", "content": "exports.sum = (a, b) => a + b;\n"}],
                "referenceTests": [
                    {
                        "path": "test/sum.test.js",
                        "content": (
                            'const test = require("node:test");\n'
                            'const assert = require("node:assert/strict");\n'
                            'const { sum } = require("../src/sum.js");\n'
                            'test("adds two numbers", () => assert.equal(sum(1, 2), 3));\n'
                        ),
                    }
                ],
                "defects": [
                    {
                        "id": "sum-subtracts",
                        "files": [
                            {"path": "src/sum.js", "content": "exports.sum = (a, b) => a - b;\n"}
                        ],
                        "expectedFailingCases": ["test/sum.test.js::adds two numbers"],
                    }
                ],
            }
        ],
    }
    assert load_manifest(_write(tmp_path, data)).runner == "node"
    data["fixtures"][0]["files"][0]["path"] = "src/sum.py"
    _refused(tmp_path, data, "not a canonical source path for runner node", "src/<name>.js")


# --- defects and expected cases ------------------------------------------------------------


def test_a_defect_that_adds_a_new_file_instead_of_replacing_one_is_refused(tmp_path: Path):
    data = _manifest()
    data["fixtures"][0]["defects"][0]["files"] = [_source("gamma", 3)]
    _refused(
        tmp_path,
        data,
        "defect 'alpha-wrong-value' of fixture 'alpha'",
        "'src/gamma.py' does not replace an existing source file",
    )


def test_a_defect_identical_to_the_reference_source_is_refused(tmp_path: Path):
    data = _manifest()
    data["fixtures"][0]["defects"][0]["files"] = [_source("alpha", 1)]
    _refused(tmp_path, data, "defect 'alpha-wrong-value'", "identical to the reference source")


def test_two_identical_defects_of_one_fixture_are_refused(tmp_path: Path):
    data = _manifest()
    twin = copy.deepcopy(data["fixtures"][0]["defects"][0]) | {"id": "alpha-twin"}
    data["fixtures"][0]["defects"].append(twin)
    _refused(tmp_path, data, "'alpha-wrong-value' and 'alpha-twin'", "same content")


@pytest.mark.parametrize(
    ("case_id", "fragment"),
    [
        ("tests/test_alpha.py::test_missing", "names no test declared in 'tests/test_alpha.py'"),
        ("tests/test_beta.py::test_beta_value", "not a reference test file"),
        ("test_alpha_value", "is not '<test file>::<test name>'"),
        ("tests/test_alpha.py::", "is not '<test file>::<test name>'"),
    ],
)
def test_an_expected_case_that_names_no_reference_case_is_refused(
    tmp_path: Path, case_id: str, fragment: str
):
    data = _manifest()
    data["fixtures"][0]["defects"][0]["expectedFailingCases"] = [case_id]
    _refused(tmp_path, data, "defect 'alpha-wrong-value' of fixture 'alpha'", fragment)


def test_an_expected_case_listed_twice_is_refused(tmp_path: Path):
    data = _manifest()
    case = "tests/test_alpha.py::test_alpha_value"
    data["fixtures"][0]["defects"][0]["expectedFailingCases"] = [case, case]
    _refused(tmp_path, data, "listed twice")


def test_a_defect_without_expected_cases_is_refused(tmp_path: Path):
    data = _manifest()
    data["fixtures"][0]["defects"][0]["expectedFailingCases"] = []
    _refused(tmp_path, data, "expectedFailingCases")


def test_parametrized_and_class_cases_are_named_as_pytest_reports_them(tmp_path: Path):
    data = _manifest()
    data["fixtures"][0]["referenceTests"][0]["content"] += (
        "\n\nimport pytest\n\n\n@pytest.mark.parametrize('n', [1])\n"
        "def test_alpha_param(n):\n    assert alpha() == n\n\n\n"
        "class TestAlpha:\n    def test_method(self):\n        assert alpha() == 1\n"
    )
    data["fixtures"][0]["defects"][0]["expectedFailingCases"] = [
        "tests/test_alpha.py::test_alpha_param[1]",
        "tests/test_alpha.py::TestAlpha::test_method",
    ]
    manifest = load_manifest(_write(tmp_path, data))
    assert declared_cases(manifest.fixtures[0].reference_tests, "pytest")[
        "tests/test_alpha.py"
    ] == {"test_alpha_value", "test_alpha_type", "test_alpha_param", "TestAlpha::test_method"}


def test_reference_tests_that_do_not_parse_are_refused(tmp_path: Path):
    data = _manifest()
    data["fixtures"][1]["referenceTests"][0]["content"] = "def test_beta(:\n"
    _refused(tmp_path, data, "fixture 'beta' referenceTests", "does not parse as Python")


def test_reference_tests_that_declare_no_test_are_refused(tmp_path: Path):
    data = _manifest()
    data["fixtures"][1]["referenceTests"][0]["content"] = "def helper():\n    return 1\n"
    data["fixtures"][1]["defects"][0]["expectedFailingCases"] = []
    _refused(tmp_path, data, "expectedFailingCases")
    data["fixtures"][1]["defects"][0]["expectedFailingCases"] = ["tests/test_beta.py::helper"]
    _refused(tmp_path, data, "fixture 'beta' referenceTests", "declares no test")


def test_blank_requirements_are_refused(tmp_path: Path):
    data = _manifest()
    data["fixtures"][0]["requirements"] = "  \n "
    _refused(tmp_path, data, "fixture 'alpha': requirements are blank")


# --- ids and exact leakage -----------------------------------------------------------------


def test_a_fixture_id_equal_to_a_history_specification_id_is_refused(tmp_path: Path):
    data = _manifest()
    data["history"][0]["specificationId"] = "alpha"
    _refused(tmp_path, data, "history 'history-past'", "fixture 'alpha'", "share the id 'alpha'")


def test_two_fixtures_with_one_id_are_refused(tmp_path: Path):
    data = _manifest()
    data["fixtures"][1]["id"] = "alpha"
    _refused(tmp_path, data, "share the id 'alpha'")


def test_one_defect_id_in_two_fixtures_is_refused(tmp_path: Path):
    data = _manifest()
    data["fixtures"][1]["defects"][0]["id"] = "alpha-wrong-value"
    _refused(
        tmp_path,
        data,
        "defect 'alpha-wrong-value' of fixture 'alpha'",
        "defect 'alpha-wrong-value' of fixture 'beta'",
    )


def test_one_defect_id_twice_in_a_fixture_is_refused(tmp_path: Path):
    data = _manifest()
    twin = copy.deepcopy(data["fixtures"][0]["defects"][0])
    twin["files"] = [_source("alpha", 77)]
    data["fixtures"][0]["defects"].append(twin)
    _refused(tmp_path, data, "fixture 'alpha': defect id 'alpha-wrong-value' is used 2 times")


def test_an_id_that_is_not_a_slug_is_refused(tmp_path: Path):
    data = _manifest()
    data["fixtures"][0]["id"] = "../alpha"
    _refused(tmp_path, data, "fixtures.0.id", "pattern")


def test_history_requirements_identical_to_a_fixture_are_exact_leakage(tmp_path: Path):
    data = _manifest()
    data["history"][0]["requirements"] = data["fixtures"][1]["requirements"]
    _refused(
        tmp_path,
        data,
        "exact leakage",
        "history 'history-past'",
        "fixture 'beta'",
        "requirements hash",
    )


def test_two_fixtures_with_identical_requirements_are_exact_leakage(tmp_path: Path):
    data = _manifest()
    data["fixtures"][1]["requirements"] = data["fixtures"][0]["requirements"]
    _refused(tmp_path, data, "fixture 'alpha' and fixture 'beta'", "requirements hash")


def test_history_source_identical_to_a_fixture_source_is_exact_leakage(tmp_path: Path):
    data = _manifest()
    data["history"][0]["files"] = [_source("alpha", 1)]
    _refused(
        tmp_path,
        data,
        "exact leakage",
        "history 'history-past' 'src/alpha.py'",
        "fixture 'alpha' 'src/alpha.py'",
        "source hash",
    )


def test_a_defect_equal_to_another_specifications_source_is_exact_leakage(tmp_path: Path):
    data = _manifest()
    data["fixtures"][1]["defects"][0]["files"] = [
        {"path": "src/beta.py", "content": _source("alpha", 1)["content"]}
    ]
    _refused(tmp_path, data, "fixture 'alpha' 'src/alpha.py'", "defect 'beta-wrong-value'")


def test_history_tests_identical_to_reference_tests_are_exact_leakage(tmp_path: Path):
    data = _manifest()
    data["history"][0]["tests"] = [_tests("alpha", 1)]
    _refused(tmp_path, data, "exact leakage", "'tests/test_alpha.py'", "test hash")


def test_several_violations_report_the_first_and_count_the_rest(tmp_path: Path):
    data = _manifest()
    data["fixtures"][0]["files"][0]["path"] = "lib/alpha.py"
    data["fixtures"][1]["requirements"] = data["fixtures"][0]["requirements"]
    message = _refused(tmp_path, data, "lib/alpha.py")
    assert re.search(r"\(and \d+ more\)$", message)


def test_validate_manifest_names_its_source_and_find_violations_lists_each_rule():
    manifest = LearningManifest.model_validate(_manifest())
    assert find_violations(manifest) == []
    validate_manifest(manifest, "tiny.json")
    alpha = manifest.fixtures[0]
    bad = Defect(
        id="alpha-new",
        files=[FileEntry(path="src/other.py", content="x = 1\n")],
        expected_failing_cases=["tests/test_alpha.py::test_nope"],
    )
    broken = alpha.model_copy(update={"defects": [*alpha.defects, bad]})
    manifest = manifest.model_copy(update={"fixtures": [broken, manifest.fixtures[1]]})
    problems = find_violations(manifest)
    assert len(problems) == 2
    with pytest.raises(SchemaError, match=r"^tiny\.json: defect 'alpha-new'.*\(and 1 more\)$"):
        validate_manifest(manifest, "tiny.json")


@given(st.from_regex(r"[a-z][a-z0-9_]{0,20}", fullmatch=True))
def test_every_canonical_source_and_test_path_is_a_canonical_relative_path(name: str):
    for path, check in (
        (f"src/{name}.py", is_source_path(f"src/{name}.py", "pytest")),
        (f"tests/test_{name}.py", is_test_path(f"tests/test_{name}.py", "pytest")),
        (f"src/{name}.js", is_source_path(f"src/{name}.js", "node")),
        (f"test/{name}.test.js", is_test_path(f"test/{name}.test.js", "node")),
    ):
        assert check is not keyword.iskeyword(name)
        assert canonical_path(path) == path


@given(st.text(min_size=1, max_size=30))
def test_no_arbitrary_text_is_a_source_path_unless_it_has_the_exact_shape(path: str):
    expected = re.fullmatch(r"src/[a-z][a-z0-9_]{0,63}\.py", path) is not None
    if expected:
        expected = not keyword.iskeyword(path[4:-3])
    assert is_source_path(path, "pytest") is expected
