"""What keeps holdouts held out and guidance checked: seeds and Skill sources shown and checked
against the holdouts, a memory already holding holdout solutions refused, every served item's
provenance checked, verify targets a host edits flagged, and the refusals before anything runs."""

import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner

from lorelab.cli.main import app
from lorelab.errors import PreflightError, UsageError
from lorelab.evaluation.conditions._finalize import host_provenance
from lorelab.evaluation.conditions._integrity import (
    check_memory_clean,
    check_seeds,
    check_served,
    edited_verify_files,
    verify_files,
)
from lorelab.evaluation.conditions._manifest import load_manifest
from lorelab.evaluation.conditions._memory import LORELAB_PROFILE, MEMCODER_PROFILE, open_memory
from lorelab.evaluation.conditions._one_run import model_matches
from lorelab.evaluation.conditions._runner import resolve_host, with_model
from lorelab.workers import adapter_argv
from tests.support.conditions import DATA, mini_manifest, mini_seed

STANDIN = DATA / "lorelab_standin.py"
MINI_HOST = DATA / "mini_host.py"


def _experience(item_id, task_id, task=None, trust="verified", qa="approved"):
    return {
        "kind": "experience",
        "id": item_id,
        "task_id": task_id,
        "task": task if task is not None else f"make check {task_id} pass",
        "trust": trust,
        "qa": qa,
    }


def _skill(item_id="skill-1", sources=("exp-1", "exp-2"), **extra):
    return {"kind": "skill", "id": item_id, "source_experience_ids": list(sources), **extra}


def _seeded_items(**override):
    items = {
        "exp-1": _experience("exp-1", "s1"),
        "exp-2": _experience("exp-2", "s2"),
        "skill-1": _skill(),
    }
    items.update(override)
    return items


def _with_standin(tmp_path, scenario, action, profile=LORELAB_PROFILE, argv=None):
    scenario_path = tmp_path / "scenario.json"
    scenario_path.write_text(json.dumps(scenario))

    async def go():
        async with open_memory(
            profile,
            argv or [sys.executable, str(STANDIN), str(scenario_path)],
            home=None,
            cwd=tmp_path,
            stderr_path=tmp_path / "standin.err",
        ) as memory:
            return await action(memory)

    return anyio.run(go)


@pytest.fixture
def mini_loaded(mini):
    return load_manifest(mini()["manifest"])


# ---------------------------------------------------------------- seeds and Skill sources


def test_a_seed_experience_that_records_a_holdout_is_refused_at_preflight(tmp_path, mini_loaded):
    items = _seeded_items(**{"exp-1": _experience("exp-1", "h1")})
    with pytest.raises(PreflightError, match="exp-1 records holdout task h1") as info:
        _with_standin(tmp_path, {"items": items}, lambda m: check_seeds(m, mini_loaded))
    # The Skill promoted from it is named too: a Skill from a holdout experience gets through
    # neither as a seed nor as a source.
    assert "Skill skill-1 source experience exp-1 records holdout task h1" in str(info.value)


def test_a_seed_whose_task_text_is_a_holdout_prompt_is_refused_without_a_task_id(
    tmp_path, mini_loaded
):
    rendered = mini_loaded.render_prompt(mini_loaded.task("h3"))
    items = _seeded_items(**{"exp-2": _experience("exp-2", None, task=f"  {rendered.upper()} ")})
    with pytest.raises(PreflightError, match="exp-2 records holdout task h3"):
        _with_standin(tmp_path, {"items": items}, lambda m: check_seeds(m, mini_loaded))


def test_a_seed_that_records_another_task_than_declared_is_refused(tmp_path, mini_loaded):
    items = _seeded_items(**{"exp-2": _experience("exp-2", "n1")})
    with pytest.raises(PreflightError, match="records task 'n1', not the declared seed task s2"):
        _with_standin(tmp_path, {"items": items}, lambda m: check_seeds(m, mini_loaded))


def test_a_seed_without_a_task_id_must_record_its_seed_tasks_prompt(tmp_path, mini_loaded):
    items = _seeded_items(**{"exp-1": _experience("exp-1", None, task="make check s1 pass")})
    found = _with_standin(tmp_path, {"items": items}, lambda m: check_seeds(m, mini_loaded))
    assert found["checked"] is True
    assert found["skillSources"] == ["exp-1", "exp-2"]
    items = _seeded_items(**{"exp-1": _experience("exp-1", None, task="something else")})
    with pytest.raises(PreflightError, match="not seed task s1's id or prompt"):
        _with_standin(tmp_path, {"items": items}, lambda m: check_seeds(m, mini_loaded))


def test_a_skill_whose_memory_sources_include_a_holdout_experience_is_refused(
    tmp_path, mini_loaded
):
    items = _seeded_items(
        **{
            "skill-1": _skill(sources=("exp-1", "exp-2", "exp-7")),
            "exp-7": _experience("exp-7", "h5"),
        }
    )
    with pytest.raises(PreflightError) as info:
        _with_standin(tmp_path, {"items": items}, lambda m: check_seeds(m, mini_loaded))
    assert "source experience exp-7 records holdout task h5" in str(info.value)
    assert "promoted from ['exp-1', 'exp-2', 'exp-7']" in str(info.value)


def _cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "lorelab", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _run_cli(paths, tmp_path, *extra, host=None):
    host = host or json.dumps([sys.executable, str(MINI_HOST)])
    return _cli(
        "eval", "conditions", "run", "--manifest", str(paths["manifest"]), "--host", host,
        "--output", str(tmp_path / "out"), *extra,
    )  # fmt: skip


def test_a_seed_file_whose_experience_solves_a_holdout_stops_the_run_with_exit_3(mini, tmp_path):
    seed = mini_seed(task="make check h1 pass", task_id="h1")
    paths = mini(seed=seed)
    done = _run_cli(
        paths, tmp_path, "--home", str(tmp_path / "home"), "--seed-memory",
        str(paths["seed"]),
    )  # fmt: skip
    assert done.returncode == 3, done.stderr
    assert "seed experience exp-1 records holdout task h1" in done.stderr
    assert done.stderr.count("\n") == 1
    assert not (tmp_path / "out" / "beta2_runs.json").exists()
    aborted = json.loads((tmp_path / "out" / "aborted.json").read_text())
    assert aborted["runsCompleted"] == 0
    assert aborted["lockActive"] is False


# ---------------------------------------------------------------- holdouts already in memory


def test_a_memory_that_already_holds_a_holdout_solution_is_refused_before_any_run(mini, tmp_path):
    seed = mini_seed()
    # Recorded after the seeds (so it is exp-3), as an earlier finalize would have.
    seed["experiences"].append(
        {
            "task": "Make check H4   pass",
            "summary": "wrote done/h4",
            "outcome": "passed",
            "verification": {"command": "python check.py h4", "exit_code": 0},
        }
    )
    paths = mini(seed=seed)
    done = _run_cli(
        paths, tmp_path, "--home", str(tmp_path / "home"), "--seed-memory",
        str(paths["seed"]),
    )  # fmt: skip
    assert done.returncode == 3, done.stderr
    assert "already holds 1 experience(s) of holdout tasks: exp-3 (h4)" in done.stderr
    assert not (tmp_path / "out" / "beta2_runs.json").exists()


def test_the_memory_check_lists_every_experience_and_names_the_leaks(tmp_path, mini_loaded):
    items = {
        "exp-1": _experience("exp-1", "s1"),
        "exp-9": _experience("exp-9", None, task="Task h2: make check h2 pass"),
        "exp-10": _experience("exp-10", "h6"),
    }
    with pytest.raises(PreflightError, match=r"2 experience\(s\) of holdout tasks: exp-10 \(h6\)"):
        _with_standin(
            tmp_path, {"items": items, "list": True}, lambda m: check_memory_clean(m, mini_loaded)
        )
    clean = {"exp-1": _experience("exp-1", "s1")}
    found = _with_standin(
        tmp_path, {"items": clean, "list": True}, lambda m: check_memory_clean(m, mini_loaded)
    )
    assert found == {"checked": True, "experiences": 1, "holdoutExperiences": 0}


def test_a_memory_that_cannot_list_is_recorded_as_unchecked_not_as_clean(tmp_path, mini_loaded):
    found = _with_standin(tmp_path, {"items": {}}, lambda m: check_memory_clean(m, mini_loaded))
    assert found["checked"] is False
    assert "checked per run" in found["reason"]


# ---------------------------------------------------------------- served items


def test_served_items_are_shown_and_unchecked_or_leaked_ones_are_named(tmp_path, mini_loaded):
    items = {
        "exp-4": _experience("exp-4", "n1"),
        "exp-5": _experience("exp-5", None, task="make check h1 pass"),
        "exp-6": _experience("exp-6", "n2", trust="unverified"),
        "skill-8": _skill("skill-8", origin="dream", candidate_id="cand-2"),
        "cand-2": {"kind": "candidate", "id": "cand-2", "state": "promoted",
                   "last_check": {"passed": True}},
        "skill-9": _skill("skill-9", origin="dream", candidate_id="cand-3"),
        "cand-3": {"kind": "candidate", "id": "cand-3", "state": "checked",
                   "last_check": {"passed": True}},
    }  # fmt: skip
    served = ["exp-4", "exp-5", "exp-6", "skill-8", "skill-9", "cand-3", "exp-404"]
    found = _with_standin(
        tmp_path,
        {"items": items},
        lambda m: check_served(m, mini_loaded, mini_loaded.task("h1"), served, {}),
    )
    assert found.checked is True
    assert found.unchecked == ("exp-6", "skill-9", "cand-3", "exp-404")
    assert found.own_solutions == ("exp-5",)
    assert found.unchecked_served is True
    reasons = {item["id"]: item.get("unchecked") for item in found.items}
    assert reasons["skill-9"] == "its candidate cand-3 is 'checked' (checks passed)"
    assert reasons["skill-8"] is None


def test_a_non_holdout_may_be_served_its_own_task_and_clean_items_are_not_flagged(
    tmp_path, mini_loaded
):
    items = {"exp-1": _experience("exp-1", "s1")}
    found = _with_standin(
        tmp_path,
        {"items": items},
        lambda m: check_served(m, mini_loaded, mini_loaded.task("s1"), ["exp-1"], {}),
    )
    assert found.own_solutions == ()
    assert found.unchecked_served is False


def test_without_a_show_operation_provenance_stays_unknown_but_leaks_are_found_by_text(
    tmp_path, mini_loaded
):
    brief_items = {"mc-exp-1": {"id": "mc-exp-1", "task": "Task h2: make check h2 pass"}}
    found = _with_standin(
        tmp_path,
        {},
        lambda m: check_served(
            m, mini_loaded, mini_loaded.task("h2"), ["mc-exp-1", "mc-skill-1"], brief_items
        ),
        profile=MEMCODER_PROFILE,
        argv=[sys.executable, "-m", "lorelab.testing.memcoder"],
    )
    assert found.checked is False
    assert found.unchecked_served is None
    assert found.own_solutions == ("mc-exp-1",)


# ---------------------------------------------------------------- verify targets


def test_the_files_a_verify_command_runs_are_its_named_files_and_directories(mini_loaded):
    task = mini_loaded.task("h1")
    paths = ["check.py", "done/README", "tests/test_a.py", "tests/sub/test_b.py", "src/x.py"]
    assert verify_files(task, paths) == ["check.py"]
    example = load_manifest(Path(DATA).parents[3] / "examples" / "conditions" / "conditions.json")
    money = example.task("seed-parse-half-up")
    assert verify_files(money, ["tests/test_money.py", "shop/money.py"]) == ["tests/test_money.py"]
    assert edited_verify_files(
        money,
        ["tests/test_money.py", "shop/money.py"],
        ["shop/money.py", "tests/test_money.py", "tests/conftest.py", "pytest.ini"],
    ) == ["pytest.ini", "tests/conftest.py", "tests/test_money.py"]
    assert edited_verify_files(money, ["tests/test_money.py"], ["shop/money.py"]) == []


# ---------------------------------------------------------------- refusals before anything runs


def test_a_malformed_seed_entry_is_bad_input_named_in_one_line_before_anything_runs(mini, tmp_path):
    seed = mini_seed()
    del seed["experiences"][1]["summary"]
    paths = mini(seed=seed)
    result = CliRunner().invoke(
        app,
        ["eval", "conditions", "run", "--manifest", str(paths["manifest"]), "--host",
         "fixture-host", "--output", str(tmp_path / "out"), "--home",
         str(tmp_path / "home"), "--seed-memory", str(paths["seed"])],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1
    assert "experiences[1]: summary: Field required" in result.output
    assert not (tmp_path / "out").exists()
    assert not (tmp_path / "home").exists()


def test_a_memory_home_inside_the_project_is_refused(mini, tmp_path):
    paths = mini()
    inside = paths["project"] / "memory-home"
    result = CliRunner().invoke(
        app,
        ["eval", "conditions", "run", "--manifest", str(paths["manifest"]), "--host",
         "fixture-host", "--output", str(tmp_path / "out"), "--home", str(inside)],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "is inside the project" in result.output
    assert not (tmp_path / "out").exists()


def test_an_unknown_host_is_reported_under_the_host_flag(mini_loaded):
    with pytest.raises(UsageError, match=r"^--host 'nonsense' is neither a shipped adapter"):
        resolve_host(mini_loaded, "nonsense")


def test_a_host_argv_asking_for_another_model_than_declared_is_refused(mini, tmp_path):
    project = mini()["project"]
    paths = mini(manifest=mini_manifest(project, model="model-a"))
    host = json.dumps([sys.executable, str(MINI_HOST), "--model", "model-b"])
    result = CliRunner().invoke(
        app,
        ["eval", "conditions", "run", "--manifest", str(paths["manifest"]), "--host", host,
         "--output", str(tmp_path / "out"), "--home", str(tmp_path / "home")],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "asks for model 'model-b' but the manifest declares host.model 'model-a'" in (
        result.output
    )
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------- the host's model


def test_the_declared_model_is_passed_to_shipped_agent_adapters_only():
    for name in ("claude", "codex", "gemini", "fixture-host"):
        argv, passed = with_model(adapter_argv(name), "sonnet")
        assert argv == [*adapter_argv(name), "--model", "sonnet"]
        assert passed == "--model"
    custom = ["python3", "my_host.py"]
    assert with_model(custom, "sonnet") == (custom, None)
    assert with_model(adapter_argv("claude"), None) == (adapter_argv("claude"), None)


def test_a_claimed_model_matches_the_declared_one_or_an_alias_inside_it():
    assert model_matches("sonnet", "claude-sonnet-4-5-20250929")
    assert model_matches("gpt-5", "GPT-5")
    assert not model_matches("opus", "claude-sonnet-4-5-20250929")


def test_the_fixture_host_echoes_the_model_it_was_asked_for(tmp_path):
    payload = {
        "protocol": "lorelab.worker/1",
        "role": "host",
        "task": {"id": "unknown-task", "prompt": "do it"},
        "guidance": None,
        "attempt": 1,
        "lastVerification": None,
    }
    for extra, claimed in ((["--model", "m-1"], "m-1"), ([], None)):
        done = subprocess.run(
            [*adapter_argv("fixture-host"), *extra],
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=60,
            check=True,
        )
        assert json.loads(done.stdout).get("model") == claimed


def test_finalize_names_the_host_in_recorded_experiences():
    assert host_provenance([*adapter_argv("claude"), "--model", "opus"]) == (
        "lorelab adapter claude --model opus"
    )
    assert host_provenance(["python3", "my host.py"]) == "python3 'my host.py'"
    assert len(host_provenance(["x" * 1000])) == 400


@pytest.mark.parametrize(
    "recorded",
    ["make check h1 pass", "Make  check h1 pass", "MAKE CHECK H1 PASS!", "make check h1 pass ."],
)
def test_the_holdout_lock_matches_a_task_by_normalized_text(tmp_path, recorded):
    import json as _json

    from click.testing import CliRunner

    from lorelab.cli.main import app

    home = str(tmp_path / "home")
    runner = CliRunner()
    done = runner.invoke(
        app, ["memory", "--home", home, "lock", "set", "mini-eval", "--task", "Make check h1 pass."]
    )
    assert done.exit_code == 0, done.output
    experience = dict(mini_seed()["experiences"][0], task=recorded, task_id="other-id")
    path = tmp_path / "experience.json"
    path.write_text(_json.dumps(experience))
    refused = runner.invoke(app, ["memory", "--home", home, "record", "--input", str(path)])
    assert refused.exit_code == 2, refused.output
    assert "holdout task of active evaluation lock 'mini-eval'" in refused.output


def test_the_runner_compares_served_tasks_by_the_same_normalized_text():
    from lorelab.evaluation.conditions._integrity import task_key

    assert (
        task_key("Make check h1 pass.") == task_key("make  check H1 pass") == "make check h1 pass"
    )
    assert task_key("...") is None
