import json
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from lorelab.cli.main import app

PY = sys.executable


@pytest.fixture
def run(tmp_path):
    home = tmp_path / "home"
    runner = CliRunner()

    def invoke(*args: str, input: str | None = None, code: int = 0):
        result = runner.invoke(app, ["memory", "--home", str(home), *args], input=input)
        assert result.exit_code == code, (result.output, result.stderr)
        if code != 0:
            assert "Traceback" not in result.output + result.stderr
        return result

    return invoke


def _json(result) -> object:
    return json.loads(result.stdout)


RECORD = {
    "task": "Fix failing test_refund_partial_amount after Decimal rounding change",
    "summary": "Quantized refunds with ROUND_HALF_UP; DB_PASSWORD=s3cr3tvalue1 in .env",
    "outcome": "passed",
    "verification": {"command": "pytest tests/test_refunds.py", "exit_code": 0},
    "commands": [
        {"command": "python scripts/regen_rates.py", "exit_code": 0},
        {"command": "python scripts/regen_rates.py --legacy", "exit_code": 1},
    ],
    "qa": "approved",
    "project": "payments-api",
}


def test_record_from_flags_file_and_stdin_gives_the_same_kind_of_result(run, tmp_path):
    flags = run(
        "record",
        "--task",
        RECORD["task"],
        "--summary",
        "Quantized refunds",
        "--outcome",
        "passed",
        "--verify-command",
        "pytest tests/test_refunds.py",
        "--verify-exit-code",
        "0",
        "--ran",
        "0:python scripts/regen_rates.py",
        "--qa",
        "approved",
        "--json",
    )
    assert _json(flags) == {"id": "exp-1", "verified": True, "redactions": {}}
    path = tmp_path / "exp.json"
    path.write_text(json.dumps(RECORD))
    from_file = _json(run("record", "--input", str(path), "--json"))
    assert from_file == {"id": "exp-2", "verified": True, "redactions": {"secret_assignment": 1}}
    from_stdin = _json(run("record", "--input", "-", "--json", input=json.dumps(RECORD)))
    assert from_stdin["id"] == "exp-3"
    human = run("record", "--input", str(path))
    assert human.stdout.startswith("recorded exp-4: verified; redactions: secret_assignment: 1")


_FLAGS = ("record", "--task", "t", "--summary", "s", "--outcome", "passed", "--verify-command", "x")


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        (
            ("record", "--task", "t"),
            None,
            "Missing options --summary, --outcome, --verify-command and --verify-exit-code.",
        ),
        (("record", "--input", "-"), "{not json", "stdin: invalid JSON"),
        (("record", "--input", "-", "--task", "x"), "{}", "either with --input or with flags"),
        (("record", "--input", "/nonexistent/x.json"), None, "x.json"),
        (("record", "--ran", "zero:pytest"), None, "expected EXIT_CODE:COMMAND"),
        (
            ("prepare", "x y z", "--budget-tokens", "5"),
            None,
            "--budget-tokens 5: Input should be greater than or equal to 50",
        ),
        (
            ("skills", "promote", "exp-1", "exp-2", "--name", "Bad Name", "--description", "d"),
            None,
            "name",
        ),
        (("show", "nope"), None, "not an item id"),
        (("outcome", "plan-4", "--passed", "--rework-count", "0"), None, "does not exist"),
        (
            (*_FLAGS, "--verify-exit-code", "99999999999999999999999"),
            None,
            "--verify-exit-code 99999999999999999999999: Input should be less than or equal to",
        ),
        (
            ("record", "--input", "-"),
            json.dumps(dict(RECORD, verification={"command": "pytest", "exit_code": "0"})),
            "stdin: verification.exit_code: Input should be a valid integer",
        ),
        (
            ("record", "--input", "-"),
            json.dumps(dict(RECORD, verification={"command": "pytest", "exit_code": True})),
            "stdin: verification.exit_code: Input should be a valid integer",
        ),
        (
            (*_FLAGS, "--verify-exit-code", "0", "--ran", "99999999999999999999:make"),
            None,
            "--ran 99999999999999999999: Input should be less than or equal to",
        ),
        (("list", "--limit", "99999999999999999999"), None, "--limit 99999999999999999999:"),
        (("list", "--limit", "0"), None, "--limit 0: Input should be greater than or equal to 1"),
        (("outcome", "plan-1", "--passed", "--rework-count", "100000"), None, "--rework-count"),
        (("candidates", "check", "cand-1", "--timeout-s", "nan"), None, "--timeout-s nan"),
        (("dream", "--limit", "99999999999999999999"), None, "--limit 99999999999999999999:"),
        (("record", "--task", "t", "--summary", "s"), None, "Missing options --outcome, --verify"),
    ],
)
def test_bad_input_is_one_line_on_stderr_with_exit_code_2(run, args, stdin, message):
    run("prepare", "a first brief makes the store")
    result = run(*args, input=stdin, code=2)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("lorelab: error:")
    assert message in lines[0]


@pytest.mark.parametrize("name", ["x" * 5000, "loop"], ids=["name-too-long", "symlink-loop"])
def test_a_home_the_os_cannot_look_up_is_one_line_with_exit_code_2(tmp_path, name):
    home = tmp_path / name
    if name == "loop":
        home.symlink_to(home)
    result = CliRunner().invoke(app, ["memory", "--home", str(home), "list"])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output + result.stderr
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("lorelab: error: memory home ")


def test_the_full_memory_cycle_works_from_the_command_line(run, tmp_path):
    path = tmp_path / "exp.json"
    path.write_text(json.dumps(RECORD))
    run("record", "--input", str(path))
    second = dict(RECORD, task="Partial refund rounding test fails again after a Decimal change")
    path.write_text(json.dumps(second))
    run("record", "--input", str(path))

    brief = _json(run("prepare", "partial refund off by a cent, Decimal rounding", "--json"))
    # Two near-repeats of one problem: the better first, as a match.
    served = [(item["id"], item["tier"]) for item in brief["experiences"]]
    assert [item_id for item_id, _ in served] == ["exp-2", "exp-1"]
    assert served[0][1] == "match"
    assert "exp-2" in run("prepare", "partial refund off by a cent, Decimal rounding").stdout
    empty = run("prepare", "Write the onboarding guide for new hires")
    assert "(empty brief brief-3: nothing stored is about this task" in empty.stdout

    skill = _json(
        run(
            "skills",
            "promote",
            "exp-1",
            "exp-2",
            "--name",
            "refund-rounding",
            "--description",
            "Fix refund rounding tests.",
            "--json",
        )
    )
    assert skill["id"] == "skill-1"
    plan = _json(run("start", "refund rounding decimal cents test", "--json"))
    assert (plan["plan_id"], plan["skill_id"]) == ("plan-1", "skill-1")
    outcome = _json(run("outcome", "plan-1", "--failed", "--rework-count", "2", "--json"))
    assert (outcome["health"], outcome["state"]) == (1, "trusted")
    health = _json(run("skills", "health", "skill-1", "--json"))
    assert health["skills"][0]["failures"] == 1
    assert "skill-1" in run("skills", "health").stdout

    listed = _json(run("list", "--kind", "brief", "--json"))
    assert listed["total"] == 4
    assert "exp-2" in run("list").stdout
    assert _json(run("show", "plan-1", "--json"))["outcome"]["rework_count"] == 2

    out = tmp_path / "skills"
    exported = _json(run("skills", "export", str(out), "--json"))
    assert exported == [str(out / "refund-rounding" / "SKILL.md")]
    front = (out / "refund-rounding" / "SKILL.md").read_text().split("---\n")[1]
    assert yaml.safe_load(front)["name"] == "refund-rounding"
    run("skills", "export", str(out), code=2)

    snap = _json(run("snapshot", str(tmp_path / "frozen.db"), "--json"))
    assert len(snap["sha256"]) == 64
    run("snapshot", str(tmp_path / "frozen.db"), code=2)


def test_locks_from_the_command_line_refuse_holdout_tasks(run, tmp_path):
    holdout = tmp_path / "holdout.json"
    holdout.write_text(json.dumps(["T-9"]))
    run("lock", "set", "cond-1", "--task", RECORD["task"], "--tasks-file", str(holdout))
    path = tmp_path / "exp.json"
    path.write_text(json.dumps(RECORD))
    refused = run("record", "--input", str(path), code=2)
    assert "holdout task of active evaluation lock 'cond-1'" in refused.stderr
    path.write_text(json.dumps(dict(RECORD, task="other", task_id="t-9")))
    run("record", "--input", str(path), code=2)
    shown = _json(run("lock", "show", "--json"))
    assert shown[0]["holdout_tasks"] == [RECORD["task"], "T-9"]
    assert "cond-1" in run("lock", "show").stdout
    assert _json(run("lock", "clear", "cond-1", "--json"))["active"] is False
    run("record", "--input", str(path))
    run("lock", "set", "cond-2", code=2)


def test_dream_check_and_promote_candidate_from_the_command_line(run, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    for task in ("Regenerate fixtures after the schema change", "Fixture regeneration again"):
        data = {
            "task": task,
            "summary": "Generated and checked the fixture file.",
            "outcome": "passed",
            "verification": {
                "command": f'{PY} -c \'assert open("out.txt").read() == "ok"\'',
                "exit_code": 0,
            },
            "commands": [
                {"command": f'{PY} -c \'open("out.txt", "w").write("ok")\'', "exit_code": 0}
            ],
        }
        run("record", "--input", "-", input=json.dumps(data))
    dream = _json(run("dream", "--json"))
    [candidate] = dream["candidates"]
    assert candidate["state"] == "candidate"
    run("candidates", "promote", candidate["id"], code=2)
    checked = run("candidates", "check", candidate["id"], "--dir", str(project), "--json")
    assert _json(checked)["passed"] is True
    skill = _json(run("candidates", "promote", candidate["id"], "--name", "fixtures", "--json"))
    assert (skill["name"], skill["origin"]) == ("fixtures", "dream")
    assert not Path(project, "out.txt").exists()


def test_a_failing_check_prints_its_results_and_exits_1(run, tmp_path):
    for task in ("Lint the shell scripts in tools", "Shell script lint in tools again"):
        data = {
            "task": task,
            "summary": "ran checks",
            "outcome": "passed",
            "verification": {"command": f"{PY} -c 'raise SystemExit(4)'", "exit_code": 0},
            "commands": [{"command": f"{PY} -c 'pass'", "exit_code": 0}],
        }
        run("record", "--input", "-", input=json.dumps(data))
    [candidate] = _json(run("dream", "--json"))["candidates"]
    result = run("candidates", "check", candidate["id"], "--dir", str(tmp_path), code=1)
    assert "FAILED" in result.stdout
    assert "[failed]" in result.stdout


def test_a_dream_over_non_ascii_tasks_exports_as_a_valid_agent_skill(run, tmp_path):
    # The audit's reproduction: tasks "ééé aaa zzz" once gave the name 'aaa-zzz-', and the
    # export then crashed with a traceback after creating an empty folder.
    project = tmp_path / "project"
    project.mkdir()
    for task in ("ééé aaa zzz", "ééé zzz aaa"):
        run(
            "record",
            "--task",
            task,
            "--summary",
            "s",
            "--outcome",
            "passed",
            "--verify-command",
            f"{PY} -c pass",
            "--verify-exit-code",
            "0",
            "--ran",
            f"0:{PY} -c 'print(1)'",
        )
    [candidate] = _json(run("dream", "--json"))["candidates"]
    assert candidate["name"] == "aaa-zzz"
    run("candidates", "check", candidate["id"], "--dir", str(project))
    skill = _json(run("candidates", "promote", candidate["id"], "--json"))
    out = tmp_path / "out"
    assert _json(run("skills", "export", str(out), "--json")) == [
        str(out / skill["name"] / "SKILL.md")
    ]
    front = yaml.safe_load((out / "aaa-zzz" / "SKILL.md").read_text().split("---\n")[1])
    assert front["name"] == "aaa-zzz"


def _invoke(*args: str):
    result = CliRunner().invoke(app, list(args))
    assert "Traceback" not in result.output + result.stderr
    return result


@pytest.mark.parametrize(
    "command",
    [
        ("list",),
        ("show", "exp-1"),
        (
            "skills",
            "health",
        ),
        ("dream",),
        ("lock", "show"),
        ("skills", "export", "OUT"),
        ("snapshot", "SNAP"),
        ("outcome", "plan-1", "--passed", "--rework-count", "0"),
    ],
)
def test_commands_that_need_a_store_refuse_a_missing_one_and_create_nothing(tmp_path, command):
    args = [
        a.replace("OUT", str(tmp_path / "out")).replace("SNAP", str(tmp_path / "s.db"))
        for a in command
    ]
    home = tmp_path / "no-home"
    result = _invoke("memory", "--home", str(home), *args)
    assert result.exit_code == 2, result.output
    assert result.stderr.strip() == (
        f"lorelab: error: {home / 'memory.db'}: no memory store here, and nothing was created; "
        "check --home, --project or $LORELAB_HOME (a store is made by the first record or prepare)"
    )
    assert list(tmp_path.iterdir()) == []


def test_a_mistyped_project_creates_no_directory_even_for_a_write(tmp_path, monkeypatch):
    monkeypatch.delenv("LORELAB_HOME", raising=False)
    typo = tmp_path / "projcet"
    listed = _invoke("memory", "--project", str(typo), "list")
    assert listed.exit_code == 2
    assert str(typo / ".lorelab" / "memory.db") in listed.stderr
    recorded = _invoke("memory", "--project", str(typo), "prepare", "anything at all")
    assert recorded.exit_code == 2
    assert f"project directory {typo}: does not exist" in recorded.stderr
    assert not typo.exists()


def test_an_unusable_home_is_one_line_for_memory_and_for_the_mcp_server(tmp_path):
    (tmp_path / "file").write_text("x")
    home = tmp_path / "file" / "home"
    for args in (
        ("memory", "--home", str(home), "prepare", "x"),
        ("mcp", "--home", str(home)),
    ):
        result = _invoke(*args)
        assert result.exit_code == 2, args
        assert result.stderr.strip() == (
            f"lorelab: error: {home}: cannot create the memory home: Not a directory"
        )


def test_the_mcp_server_refuses_a_missing_project_directory_at_start(tmp_path):
    result = _invoke("mcp", "--home", str(tmp_path / "home"), "--project", str(tmp_path / "typo"))
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"lorelab: error: project directory {tmp_path / 'typo'}: does not exist or is not a "
        "directory"
    )
    assert list(tmp_path.iterdir()) == []


def test_show_prints_a_table_of_fields_for_people(run):
    data = dict(RECORD, task="Fix the [/tmp] path handling [bold]now[/bold]", host="codex")
    run("record", "--input", "-", input=json.dumps(data))
    shown = run("show", "exp-1").stdout
    assert not shown.lstrip().startswith("{")
    for row in ("provenance.host", "codex", "provenance.verification.exit_code", "trust"):
        assert row in shown
    assert "[/tmp]" in shown  # shown as written, not read as markup
    assert "[bold]now[/bold]" in shown
    assert "[/tmp]" in run("list").stdout
    assert "secret_assignment" in shown  # the redaction counts are shown


def test_checkpoint_and_recover_from_the_command_line(run, tmp_path):
    saved = run(
        "checkpoint",
        "--scope",
        "task-9",
        "--boundary",
        "restart",
        "--summary",
        "Half done; token=abcd1234efgh",
        "--note",
        "keep the v3 schema",
        "--failed",
        "2:make legacy",
    )
    assert "(restart); redactions: secret_assignment: 1" in saved.stdout
    brief = run("recover", "task-9").stdout
    assert "`make legacy` (exit 2)" in brief
    assert "abcd1234efgh" not in brief
    assert run("recover", "other").stdout == "(no checkpoint for scope other)\n"
    run(
        "checkpoint",
        "--scope",
        "s",
        "--boundary",
        "restart",
        "--summary",
        "x",
        "--failed",
        "0:ok",
        code=2,
    )


def test_recover_creates_nothing_and_an_unwritable_home_refuses_a_checkpoint(tmp_path):
    nothing = _invoke("memory", "--home", str(tmp_path / "none"), "recover", "s", "--json")
    assert json.loads(nothing.stdout) == {"found": False, "checkpoint": None, "handoff_brief": None}
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "file").write_text("x")
    home = tmp_path / "file" / "home"
    refused = _invoke(
        "memory",
        "--home",
        str(home),
        "checkpoint",
        "--scope",
        "s",
        "--boundary",
        "restart",
        "--summary",
        "x",
    )
    assert refused.exit_code == 2
    [line] = refused.stderr.strip().splitlines()
    assert line.startswith(f"lorelab: error: {tmp_path / 'file'}")


def test_exporting_no_skills_says_how_a_skill_comes_to_exist(run, tmp_path):
    run("prepare", "anything")  # the README's sequence: a store with no Skill yet
    out = run("skills", "export", str(tmp_path / "skills"), code=0).stdout
    assert out.startswith("no Skills to export")
    assert "lorelab memory skills promote" in out
    assert "memory candidates promote" in out
