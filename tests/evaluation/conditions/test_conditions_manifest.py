import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from lorelab.cli.main import app
from lorelab.errors import InputFileError, JSONInputError, SchemaError
from lorelab.evaluation.conditions import manifest_schema
from lorelab.evaluation.conditions._manifest import load_manifest

EXAMPLE_MANIFEST = (
    Path(__file__).resolve().parents[3] / "examples" / "conditions" / "conditions.json"
)


def _refusal(write_json, data) -> str:
    with pytest.raises(SchemaError) as info:
        load_manifest(write_json(data))
    return str(info.value)


def test_the_example_manifest_is_valid_with_at_least_ten_tasks_and_six_holdouts():
    manifest = load_manifest(EXAMPLE_MANIFEST)
    assert 10 <= len(manifest.tasks) <= 20
    assert len(manifest.holdout_ids()) >= 6
    assert len(manifest.seeds) == 2
    assert {o.experience_id for o in manifest.skill.promoted_from} == {
        s.experience_id for s in manifest.seeds
    }
    for task in manifest.tasks:
        assert task.verify_argv()[:3] == ["python", "-m", "pytest"]
        assert "::" in task.verify
        assert task.expected_behaviour


def test_fewer_than_six_holdouts_is_refused(write_json, example_manifest_data):
    holdouts = [t for t in example_manifest_data["tasks"] if t["holdout"]]
    for task in holdouts[5:]:
        task["holdout"] = False
    message = _refusal(write_json, example_manifest_data)
    assert "5 holdout task(s)" in message
    assert "at least 6" in message


def test_a_holdout_that_is_also_a_seed_is_refused(write_json, example_manifest_data):
    seed = example_manifest_data["seeds"][0]["taskId"]
    next(t for t in example_manifest_data["tasks"] if t["id"] == seed)["holdout"] = True
    message = _refusal(write_json, example_manifest_data)
    assert f"seed task {seed} is also a holdout" in message


def test_a_skill_promoted_from_a_holdout_experience_is_refused(write_json, example_manifest_data):
    holdout = next(t["id"] for t in example_manifest_data["tasks"] if t["holdout"])
    example_manifest_data["skill"]["promotedFrom"].append(
        {"experienceId": "exp-from-holdout", "taskId": holdout}
    )
    message = _refusal(write_json, example_manifest_data)
    assert "promoted from experience exp-from-holdout" in message
    assert f"holdout task {holdout}" in message


def test_a_skill_not_promoted_from_exactly_the_seeds_is_refused(write_json, example_manifest_data):
    example_manifest_data["skill"]["promotedFrom"] = example_manifest_data["skill"]["promotedFrom"][
        :1
    ]
    message = _refusal(write_json, example_manifest_data)
    assert "exactly the two seed experiences" in message


def test_a_task_without_a_verify_command_is_refused_by_name(write_json, example_manifest_data):
    task = example_manifest_data["tasks"][3]
    del task["verify"]
    message = _refusal(write_json, example_manifest_data)
    assert f"task {task['id']} has no verify command" in message


def test_a_blank_verify_command_is_refused_by_name(write_json, example_manifest_data):
    task = example_manifest_data["tasks"][4]
    task["verify"] = "   "
    assert f"task {task['id']} has no verify command" in _refusal(write_json, example_manifest_data)


def test_a_verify_command_with_shell_operators_is_refused(write_json, example_manifest_data):
    task = example_manifest_data["tasks"][0]
    task["verify"] = "python -m pytest -q && echo ok"
    message = _refusal(write_json, example_manifest_data)
    assert "one command" in message
    assert "&&" in message


@pytest.mark.parametrize(
    ("verify", "expected"),
    [
        ("FOO=1 python -m pytest -q", "environment assignment 'FOO=1', which needs a shell"),
        ("cd tests && pytest", "shell operator(s) &&"),
        ("cd tests", "shell builtin 'cd'"),
        ("python -m pytest -q >out.txt", "shell operator(s) >out.txt"),
        ("python -m pytest -q 2>/dev/null", "shell operator(s) 2>/dev/null"),
        ("python -m pytest $PYTEST_ARGS", "shell expansion '$PYTEST_ARGS'"),
        ("python -m pytest $(cat args)", "shell expansion '$(cat'"),
    ],
)
def test_a_verify_command_that_needs_a_shell_is_refused_naming_the_task(
    write_json, example_manifest_data, verify, expected
):
    task = example_manifest_data["tasks"][3]
    task["verify"] = verify
    message = _refusal(write_json, example_manifest_data)
    assert f"task {task['id']}" in message
    assert expected in message


def test_a_verify_command_with_an_equals_sign_in_an_argument_is_accepted(
    write_json, example_manifest_data
):
    example_manifest_data["tasks"][0]["verify"] = "python -m pytest -q -o addopts= tests"
    load_manifest(write_json(example_manifest_data))


def test_a_time_budget_the_attempts_can_never_use_is_refused(write_json, example_manifest_data):
    example_manifest_data["reworkBudget"] = 1
    example_manifest_data["host"]["timeBudgetS"] = 241
    message = _refusal(write_json, example_manifest_data)
    assert "host.timeBudgetS 241 can never be used" in message
    assert "2 host attempt(s) of at most 120 s each (240 s in all)" in message
    example_manifest_data["host"]["timeBudgetS"] = 240
    assert load_manifest(write_json(example_manifest_data)).host.time_budget_s == 240


def test_a_time_budget_beyond_six_attempts_is_refused_by_the_schema(
    write_json, example_manifest_data
):
    example_manifest_data["reworkBudget"] = 5
    example_manifest_data["host"]["timeBudgetS"] = 3600
    message = _refusal(write_json, example_manifest_data)
    assert "timeBudgetS" in message


def test_fewer_than_ten_tasks_is_refused(write_json, example_manifest_data):
    example_manifest_data["tasks"] = example_manifest_data["tasks"][:9]
    assert "tasks" in _refusal(write_json, example_manifest_data)


def test_more_than_twenty_tasks_is_refused(write_json, example_manifest_data):
    extra = []
    for n in range(8):
        task = dict(example_manifest_data["tasks"][-1])
        task["id"] = f"extra-{n}"
        extra.append(task)
    example_manifest_data["tasks"] += extra
    assert "tasks" in _refusal(write_json, example_manifest_data)


def test_a_repeated_task_id_is_refused(write_json, example_manifest_data):
    example_manifest_data["tasks"][6]["id"] = example_manifest_data["tasks"][7]["id"]
    assert "appears more than once" in _refusal(write_json, example_manifest_data)


def test_three_seeds_are_refused(write_json, example_manifest_data):
    example_manifest_data["seeds"].append(
        {"taskId": "n-slug-collapse", "experienceId": "exp-3", "qa": "approved"}
    )
    assert "exactly 2" in _refusal(write_json, example_manifest_data)


def test_a_seed_not_approved_by_qa_is_refused(write_json, example_manifest_data):
    example_manifest_data["seeds"][1]["qa"] = "unreviewed"
    assert "seeds.1.qa" in _refusal(write_json, example_manifest_data)


def test_a_seed_naming_an_unknown_task_is_refused(write_json, example_manifest_data):
    example_manifest_data["seeds"][1]["taskId"] = "no-such-task"
    assert "not a task of the manifest" in _refusal(write_json, example_manifest_data)


def test_a_prompt_template_without_the_prompt_placeholder_is_refused(
    write_json, example_manifest_data
):
    example_manifest_data["promptTemplate"] = "Do the task {task_id}"
    assert "promptTemplate" in _refusal(write_json, example_manifest_data)


def test_a_non_canonical_task_file_is_refused(write_json, example_manifest_data):
    example_manifest_data["tasks"][0]["files"] = ["../outside.py"]
    assert "files" in _refusal(write_json, example_manifest_data)


def test_unknown_manifest_fields_are_refused(write_json, example_manifest_data):
    example_manifest_data["surprise"] = True
    assert "surprise" in _refusal(write_json, example_manifest_data)


def test_default_thresholds_apply_when_the_manifest_declares_none(
    write_json, example_manifest_data
):
    del example_manifest_data["thresholds"]
    manifest = load_manifest(write_json(example_manifest_data))
    assert manifest.thresholds.alpha == 0.05
    assert manifest.thresholds.max_negative_transfer == 0
    assert manifest.thresholds.max_mean_guidance_tokens == 1200


def test_a_manifest_with_duplicate_keys_is_refused(tmp_path):
    path = tmp_path / "dup.json"
    path.write_text('{"schemaVersion": 1, "schemaVersion": 1}', encoding="utf-8")
    with pytest.raises(JSONInputError, match="duplicate key"):
        load_manifest(path)


def test_a_missing_manifest_is_an_input_error(tmp_path):
    with pytest.raises(InputFileError, match="no such file"):
        load_manifest(tmp_path / "absent.json")


def test_the_prompt_template_substitutes_only_its_two_placeholders():
    manifest = load_manifest(EXAMPLE_MANIFEST)
    task = manifest.tasks[0]
    prompt = manifest.render_prompt(task)
    assert task.prompt in prompt
    assert task.id in prompt
    assert "{prompt}" not in prompt


def test_the_schema_command_prints_the_models_json_schema():
    result = CliRunner().invoke(app, ["eval", "conditions", "schema"])
    assert result.exit_code == 0
    schema = json.loads(result.output)
    assert schema == manifest_schema()
    assert {"tasks", "seeds", "skill", "thresholds", "host", "promptTemplate"} <= set(
        schema["properties"]
    )
    assert schema["properties"]["tasks"]["minItems"] == 10
    assert schema["properties"]["tasks"]["maxItems"] == 20


@pytest.mark.parametrize(
    ("verify", "expected"),
    [
        ("python -m pytest -q tests;rm -rf shop", "shell operator(s) ; inside a word"),
        ("python -m pytest -q tests|tee log", "shell operator(s) | inside a word"),
        ("python -m pytest -q tests&", "shell operator(s) & inside a word"),
        ("python -m pytest -q tests/test_*.py", "unquoted glob character(s) *"),
        ("python -m pytest -q tests/test_?.py", "unquoted glob character(s) ?"),
    ],
)
def test_shell_syntax_attached_to_a_word_is_refused_too(
    write_json, example_manifest_data, verify, expected
):
    task = example_manifest_data["tasks"][2]
    task["verify"] = verify
    message = _refusal(write_json, example_manifest_data)
    assert f"task {task['id']}" in message
    assert expected in message


@pytest.mark.parametrize(
    "verify",
    [
        "python -m pytest -q -k 'money or tax' tests",
        'python -c "import sys; sys.exit(0)"',
        "python -m pytest -q -k 'test_*' tests",
        r"python -m pytest -q tests\;x",
    ],
)
def test_quoted_or_escaped_shell_characters_are_plain_arguments(
    write_json, example_manifest_data, verify
):
    example_manifest_data["tasks"][2]["verify"] = verify
    assert load_manifest(write_json(example_manifest_data)).tasks[2].verify == verify


@pytest.mark.parametrize(
    ("field", "value"),
    [("alpha", "0.05"), ("maxPollutionRate", True), ("maxMeanGuidanceTokens", "1200")],
)
def test_a_threshold_given_as_a_string_or_boolean_is_refused(
    write_json, example_manifest_data, field, value
):
    example_manifest_data["thresholds"] = {field: value}
    assert f"thresholds.{field}" in _refusal(write_json, example_manifest_data)


def test_an_integer_threshold_is_still_a_number(write_json, example_manifest_data):
    example_manifest_data["thresholds"] = {"maxMeanGuidanceTokens": 900, "maxPollutionRate": 0}
    manifest = load_manifest(write_json(example_manifest_data))
    assert manifest.thresholds.max_mean_guidance_tokens == 900


@pytest.mark.parametrize("field", ["prompt", "expectedBehaviour"])
def test_a_whitespace_only_task_text_is_refused(write_json, example_manifest_data, field):
    example_manifest_data["tasks"][1][field] = " \n\t "
    assert "must not be blank" in _refusal(write_json, example_manifest_data)


def test_a_whitespace_only_shared_procedure_is_refused(write_json, example_manifest_data):
    example_manifest_data["sharedProcedure"] = "   "
    assert "must not be blank" in _refusal(write_json, example_manifest_data)
