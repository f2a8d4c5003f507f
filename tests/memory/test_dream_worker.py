"""The worker-based Dream: ``memory dream --agent`` end to end, with real worker processes.

The shipped protocol fixture is the dreamer for the happy path; stand-in workers (small Python
scripts named by a JSON argv) record the payload they were given and answer what a test needs:
invalid proposals, a non-zero exit, a timeout, an identity change.
"""

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner

from lorelab.cli.main import app
from lorelab.mcp import build_server
from lorelab.memory import (
    CandidateProposal,
    CandidateRequest,
    ClaimedModel,
    PrepareRequest,
    ProposalsRequest,
    SkillStep,
    WorkerProvenance,
    _dream_worker,
)
from lorelab.workers import adapter_argv, prompt_hash
from tests.support.memory import experience

PY = sys.executable
VERIFY = f'{PY} -c \'assert open("data.txt").read() == "ok"\''
FIRST = "Regenerate the invoice fixtures after the ledger schema change"
SECOND = "Invoice fixtures regeneration for the ledger schema"
TASK = "regenerate invoice fixtures for the ledger schema change"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    (path / "data.txt").write_text("ok")
    return path


@pytest.fixture
def run(tmp_path: Path, project: Path):
    home = tmp_path / "home"
    runner = CliRunner()

    def invoke(*args: str, input: str | None = None, code: int = 0, project_dir=project):
        where = ["--project", str(project_dir)] if project_dir is not None else []
        result = runner.invoke(app, ["memory", "--home", str(home), *where, *args], input=input)
        assert result.exit_code == code, (result.output, result.stderr)
        assert "Traceback" not in result.output + result.stderr
        return result

    return invoke


def _json(result: Any) -> Any:
    return json.loads(result.stdout)


def _record(run, task: str, *, verify: str = VERIFY, exit_code: int = 0, **extra: Any) -> str:
    data = {
        "task": task,
        "summary": "Regenerated the fixture file and checked it.",
        "outcome": "passed" if exit_code == 0 else "failed",
        "verification": {"command": verify, "exit_code": exit_code},
        "commands": [{"command": f"{PY} -c 'pass'", "exit_code": 0}],
        "qa": "approved",
        **extra,
    }
    return _json(run("record", "--input", "-", "--json", input=json.dumps(data)))["id"]


def _seed(run) -> list[str]:
    """Two verified experiences sharing VERIFY, one failed one, one verified elsewhere."""
    return [
        _record(run, FIRST),
        _record(run, SECOND),
        _record(run, "Invoice fixtures attempt that broke the ledger", exit_code=1),
        _record(run, "Unrelated lint fix in the docs folder", verify=f"{PY} -c 'pass' docs"),
    ]


STANDIN = """
import json, os, sys, time
here = os.path.dirname(os.path.abspath(__file__))
payload = sys.stdin.read()
with open(os.path.join(here, "seen.json"), "w") as handle:
    json.dump({"payload": json.loads(payload), "cwd": os.getcwd()}, handle)
mode = open(os.path.join(here, "mode")).read().strip()
if mode == "sleep":
    time.sleep(60)
if mode == "edit-self":
    with open(os.path.abspath(__file__), "a") as handle:
        handle.write("# changed during the call\\n")
if mode == "fail":
    sys.stderr.write("dreamer crashed\\n")
    sys.exit(5)
sys.stdout.write(open(os.path.join(here, "answer.json")).read())
"""


def _standin(tmp_path: Path, answer: Any, mode: str = "answer") -> tuple[str, Path]:
    """A worker script answering ``answer``; returns its --agent argv and the record path."""
    directory = tmp_path / "worker"
    directory.mkdir(exist_ok=True)
    script = directory / "dreamer.py"
    script.write_text(STANDIN)
    (directory / "answer.json").write_text(json.dumps(answer))
    (directory / "mode").write_text(mode)
    return json.dumps([PY, str(script)]), directory / "seen.json"


def _proposal(name: str, sources: list[str], **overrides: Any) -> dict[str, Any]:
    return {
        "name": name,
        "description": "Regenerate the invoice fixtures and check them.",
        # Steps of its own, so only the proposals meant to be duplicates are.
        "steps": [f"echo {shlex.quote(name)}", VERIFY],
        "checks": [{"command": VERIFY, "expectedExitCode": 0}],
        "sourceExperienceIds": sources,
        **overrides,
    }


# ---------------------------------------------------------------- the fixture dreamer


def test_the_fixture_dreamer_stores_unchecked_worker_candidates_that_reach_nothing(run, project):
    ids = _seed(run)
    result = _json(run("dream", "--agent", "fixture", "--json"))
    assert result["ok"] is True
    assert result["receipt"]["role"] == "dreamer"
    assert result["receipt"]["evidenceKind"] == "protocol-fixture"
    assert result["receipt"]["failure"] is None
    assert (result["stored"], result["refused"]) == (1, 0)
    [candidate] = result["candidates"]
    assert candidate["origin"] == "worker"
    assert candidate["state"] == "candidate"
    assert candidate["source_experience_ids"] == [ids[1], ids[0]]
    assert candidate["checks"] == [{"command": VERIFY, "expected_exit_code": 0}]
    provenance = candidate["provenance"]
    assert provenance["worker_argv"] == adapter_argv("fixture")
    assert provenance["prompt_hash"] == prompt_hash("dreamer")
    assert provenance["prompt_hash"] == result["receipt"]["promptHash"]
    assert provenance["model"] == {"claimed": None, "verified": None}
    assert provenance["evidence_kind"] == "protocol-fixture"
    assert provenance["called_at"].endswith("Z")
    assert result["cwd"] == str(project)

    # Unchecked: in no brief, no plan, and not promotable.
    brief = _json(run("prepare", TASK, "--json"))
    assert brief["skills"] == []
    assert _json(run("start", TASK, "--json"))["plan_id"] is None
    refused = run("candidates", "promote", candidate["id"], code=2)
    assert "run `lorelab memory candidates check" in refused.stderr

    checked = _json(run("candidates", "check", candidate["id"], "--json"))
    assert checked["passed"] is True
    skill = _json(run("candidates", "promote", candidate["id"], "--json"))
    assert (skill["origin"], skill["candidate_id"]) == ("dream", candidate["id"])
    assert [item["id"] for item in _json(run("prepare", TASK, "--json"))["skills"]] == [skill["id"]]
    plan = _json(run("start", TASK, "--json"))
    assert plan["skill_id"] == skill["id"]
    assert [step["command"] for step in plan["steps"]] == [VERIFY]
    shown = _json(run("show", candidate["id"], "--json"))
    assert (shown["state"], shown["provenance"]) == ("promoted", provenance)


def test_dreaming_twice_refuses_the_known_procedure_as_a_duplicate(run):
    _seed(run)
    first = _json(run("dream", "--agent", "fixture", "--json"))
    again = _json(run("dream", "--agent", "fixture", "--json"))
    assert again["stored"] == 0
    [outcome] = again["proposals"]
    assert outcome["refusal"] == "duplicate"
    assert first["candidates"][0]["id"] in outcome["reason"]
    assert _json(run("list", "--kind", "candidate", "--json"))["total"] == 1


def test_the_table_shows_each_proposal_and_the_receipt(run):
    _seed(run)
    out = run("dream", "--agent", "fixture").stdout
    assert "1 proposal(s) stored as unchecked candidate(s), 0 refused" in out
    assert "evidence: protocol-fixture" in out
    assert "receipt: role dreamer, exit 0" in out
    assert "cand-1" in out
    assert "stored" in out


# ---------------------------------------------------------------- what the worker sees


def test_the_payload_carries_only_verified_experiences_as_stored(run, tmp_path):
    ids = _seed(run)
    secret = _record(
        run,
        "Rotate the invoice export credentials",
        verify=VERIFY,
        commands=[{"command": "curl https://bob:hunter2secret@example.com/x", "exit_code": 0}],
    )
    agent, seen = _standin(tmp_path, {"candidates": []})
    result = _json(run("dream", "--agent", agent, "--json"))
    assert result["ok"] is True
    payload = json.loads(seen.read_text())["payload"]
    assert payload["role"] == "dreamer"
    assert payload["limits"] == {"maxCandidates": 10}
    given = [item["id"] for item in payload["experiences"]]
    assert given == [secret, ids[3], ids[1], ids[0]]
    assert ids[2] not in given
    assert all(item["verification"]["exitCode"] == 0 for item in payload["experiences"])
    text = json.dumps(payload)
    assert "attempt that broke" not in text
    assert "hunter2secret" not in text
    assert "[REDACTED" in text
    assert result["offered_experience_ids"] == given


def test_limit_project_and_max_candidates_shape_the_payload(run, tmp_path):
    _record(run, FIRST, project="billing")
    _record(run, SECOND, project="billing")
    _record(run, "Regenerate the invoice fixtures for search", project="search")
    agent, seen = _standin(tmp_path, {"candidates": []})
    run(
        "dream",
        "--agent",
        agent,
        "--project-name",
        "billing",
        "--limit",
        "2",
        "--max-candidates",
        "3",
    )
    payload = json.loads(seen.read_text())["payload"]
    assert [item["id"] for item in payload["experiences"]] == ["exp-2", "exp-1"]
    assert payload["limits"] == {"maxCandidates": 3}


def test_without_a_project_the_worker_runs_in_a_private_temporary_directory(run, tmp_path):
    _seed(run)
    agent, seen = _standin(tmp_path, {"candidates": []})
    result = _json(run("dream", "--agent", agent, "--json", project_dir=None))
    assert result["cwd"] is None
    cwd = Path(json.loads(seen.read_text())["cwd"])
    assert cwd.name.startswith("lorelab-dream-")
    assert not cwd.exists()


def test_with_a_project_the_worker_runs_in_it(run, tmp_path, project):
    _seed(run)
    agent, seen = _standin(tmp_path, {"candidates": []})
    run("dream", "--agent", agent)
    assert json.loads(seen.read_text())["cwd"] == str(project)


# ---------------------------------------------------------------- proposals judged one by one


def test_each_invalid_proposal_is_refused_with_its_reason_and_only_sound_ones_stored(run, tmp_path):
    ids = _seed(run)
    mined = _json(run("dream", "--json"))["candidates"]
    assert mined, "the two verified experiences share a mined procedure"
    mined_steps = [step["command"] for step in mined[0]["steps"]]
    proposals = [
        _proposal("unknown-source", [ids[0], "exp-99"]),
        _proposal("unverified-source", [ids[0], ids[2]]),
        _proposal("one-source", [ids[0]]),
        _proposal("repeated-source", [ids[0], ids[0]]),
        _proposal("not-an-id", [ids[0], "skill-1"]),
        _proposal("no-checks", [ids[0], ids[1]], checks=[]),
        _proposal("no-steps", [ids[0], ids[1]], steps=[]),
        _proposal(
            "blank-check", [ids[0], ids[1]], checks=[{"command": " ", "expectedExitCode": 0}]
        ),
        _proposal("Bad Name!", [ids[0], ids[1]]),
        _proposal("x" * 65, [ids[0], ids[1]]),
        _proposal("blank-description", [ids[0], ids[1]], description="  "),
        _proposal("mined-again", [ids[0], ids[1]], steps=mined_steps),
        _proposal("sound-one", [ids[0], ids[1]], steps=[VERIFY]),
        _proposal(
            "same-procedure",
            [ids[1], ids[0]],
            steps=[f'{PY}  -c \'assert open("data.txt").read() == "ok"\''],
        ),
        _proposal("sound-one", [ids[0], ids[1]], steps=[f"{PY} -c 'pass' again"]),
    ]
    agent, _ = _standin(tmp_path, {"candidates": proposals})
    result = _json(run("dream", "--agent", agent, "--max-candidates", "20", "--json"))
    assert result["ok"] is True
    assert [o["index"] for o in result["proposals"]] == list(range(1, len(proposals) + 1))

    def refused(index: int, refusal: str, fragment: str) -> None:
        outcome = result["proposals"][index - 1]
        assert (outcome["status"], outcome["refusal"]) == ("refused", refusal), outcome
        assert outcome["candidate_id"] is None
        assert fragment in outcome["reason"], outcome["reason"]

    refused(1, "sources", "exp-99 does not exist in this store")
    refused(2, "sources", f"{ids[2]} is not a verified experience")
    refused(3, "sources", "needs at least two verified experiences")
    refused(4, "sources", "listed more than once")
    refused(5, "sources", "'skill-1' is not an experience id")
    refused(6, "checks", "no checks")
    refused(7, "steps", "no steps")
    refused(8, "checks", "check 1 is blank")
    refused(9, "name", "lowercase letters, digits and single hyphens")
    refused(10, "name", "1 to 64 characters")
    refused(11, "description", "must not be blank")
    refused(12, "duplicate", mined[0]["id"])
    refused(14, "duplicate", "already known")
    refused(15, "name", "already taken by a candidate")
    stored = result["proposals"][12]
    assert (stored["status"], stored["name"]) == ("stored", "sound-one")
    assert [c["id"] for c in result["candidates"]] == [stored["candidate_id"]]
    assert (result["stored"], result["refused"]) == (1, 14)
    listed = _json(run("list", "--kind", "candidate", "--json"))
    assert listed["total"] == len(mined) + 1
    assert "already taken" in run("dream", "--agent", agent, "--max-candidates", "20").stdout


def test_a_source_the_worker_was_not_given_is_refused(run, tmp_path):
    ids = _seed(run)
    agent, _ = _standin(tmp_path, {"candidates": [_proposal("older-work", [ids[0], ids[1]])]})
    result = _json(run("dream", "--agent", agent, "--limit", "2", "--json"))
    [outcome] = result["proposals"]
    assert outcome["refusal"] == "sources"
    assert f"{ids[0]} was not among the experiences given to the worker" in outcome["reason"]


# ---------------------------------------------------------------- failed calls store nothing


@pytest.mark.parametrize(
    ("mode", "answer", "failure", "extra"),
    [
        ("fail", {"candidates": []}, "nonzero-exit", ()),
        ("sleep", {"candidates": []}, "timeout", ("--worker-timeout-s", "1.5")),
        ("answer", "not json", "invalid-json", ()),
        (
            "answer",
            {"candidates": [_proposal("a", ["exp-1", "exp-2"])] * 2},
            "invalid-response",
            ("--max-candidates", "1"),
        ),
    ],
)
def test_a_failed_call_stores_nothing_and_reports_its_receipt(
    run, tmp_path, mode, answer, failure, extra
):
    _seed(run)
    agent, seen = _standin(tmp_path, answer, mode)
    out = run("dream", "--agent", agent, *extra, "--json", code=1)
    result = _json(out)
    assert result["ok"] is False
    assert result["receipt"]["failure"] == failure
    assert result["receipt"]["spawned"] is True
    assert (result["proposals"], result["candidates"], result["stored"]) == ([], [], 0)
    assert seen.exists()
    assert _json(run("list", "--kind", "candidate", "--json"))["total"] == 0


def test_a_failed_call_is_explained_in_the_table_output(run, tmp_path):
    _seed(run)
    agent, _ = _standin(tmp_path, {}, "fail")
    out = run("dream", "--agent", agent, code=1).stdout
    assert "the dreamer call failed (nonzero-exit: the worker ended with exit code 5)" in out
    assert "nothing was stored" in out


def test_a_worker_that_changes_during_the_call_exits_3_and_stores_nothing(run, tmp_path):
    ids = _seed(run)
    agent, _ = _standin(
        tmp_path, {"candidates": [_proposal("sound", [ids[0], ids[1]])]}, "edit-self"
    )
    result = _json(run("dream", "--agent", agent, "--json", code=3))
    assert result["receipt"]["failure"] == "identity-changed"
    assert _json(run("list", "--kind", "candidate", "--json"))["total"] == 0


# ---------------------------------------------------------------- refusals before anything runs


def test_fewer_than_two_verified_experiences_calls_no_worker_and_is_not_an_error(run, tmp_path):
    # As mining does on the same store ("0 new candidates", exit 0): too little to dream on is
    # a result, not a usage error.
    _record(run, FIRST)
    _record(run, SECOND, exit_code=1)
    agent, seen = _standin(tmp_path, {"candidates": []})
    out = run("dream", "--agent", agent, code=0)
    assert "needs at least two verified experiences; the store has 1" in out.stdout
    assert "--bin" not in out.stdout + out.stderr
    assert not seen.exists()
    result = _json(run("dream", "--agent", agent, "--json", code=0))
    assert result["receipt"] is None
    assert result["stored"] == 0
    assert "worker was not called" in result["skipped"]
    assert run("dream", code=0).stdout.startswith("0 new candidate(s)")


def test_a_payload_over_the_cap_is_refused_before_anything_runs(run, tmp_path, monkeypatch):
    _seed(run)
    monkeypatch.setattr(_dream_worker, "MAX_PAYLOAD_BYTES", 900)
    agent, seen = _standin(tmp_path, {"candidates": []})
    out = run("dream", "--agent", agent, code=2)
    assert "over the 900-byte cap; lower --limit; nothing was run" in out.stderr
    assert not seen.exists()
    run("dream", "--agent", agent, "--limit", "2")
    assert seen.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--worker-timeout-s", "0.5"), "--worker-timeout-s is only used with --agent"),
        (("--identity", "me"), "--identity is only used with --agent"),
        (("--agent", "fixture", "--worker-timeout-s", "0"), "--worker-timeout-s"),
        (("--agent", "fixture", "--max-candidates", "0"), "--max-candidates 0: Input should be"),
        (("--agent", "pytest -q"), "neither a shipped adapter"),
    ],
)
def test_bad_dream_options_are_one_line_with_exit_2(run, args, message):
    _seed(run)
    out = run("dream", *args, code=2)
    assert message in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert _json(run("list", "--kind", "candidate", "--json"))["total"] == 0


# ---------------------------------------------------------------- the store and the server


def _provenance(argv: list[str], operator: str | None = None) -> WorkerProvenance:
    return WorkerProvenance(
        worker_argv=argv,
        operator_identity=operator,
        launcher_sha256="0" * 64,
        prompt_version="lorelab.role-prompt/1",
        prompt_hash=prompt_hash("dreamer"),
        model=ClaimedModel(claimed="some-model"),
        evidence_kind=None,
        called_at="2025-01-01T00:00:00Z",
    )


def test_secrets_in_proposals_and_argv_are_redacted_before_they_are_stored(store):
    first = store.record(experience()).id
    second = store.record(experience(task="Refund rounding fails again")).id
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    [outcome] = store.add_proposed_candidates(
        ProposalsRequest(
            proposals=[
                CandidateProposal(
                    name="refund-rounding",
                    description=f"Uses {token} to fetch rates.",
                    steps=[f"curl -H 'Authorization: token {token}' https://api.github.com"],
                    checks=[
                        SkillStep(command="pytest tests/test_refunds.py", expected_exit_code=0)
                    ],
                    source_experience_ids=[first, second],
                )
            ],
            offered_ids=[first, second],
            provenance=_provenance(["worker", f"--token={token}"], f"ci bot {token}"),
        )
    ).outcomes
    assert outcome.status == "stored"
    stored = store.candidate(CandidateRequest(candidate_id=outcome.candidate_id))
    text = stored.model_dump_json()
    assert token not in text
    assert "[REDACTED" in stored.description
    assert stored.provenance is not None
    assert stored.provenance.model.claimed == "some-model"
    assert stored.provenance.model.verified is None
    assert stored.origin == "worker"
    assert store.prepare(PrepareRequest(task="refund rounding decimal")).skills == []


def test_the_mcp_server_offers_no_way_to_call_a_worker(store, tmp_path):
    server = build_server(store, tmp_path, tmp_path)
    tools = anyio.run(server.list_tools)
    schemas = {tool.name: tool.input_schema for tool in tools}
    assert set(schemas["lore_dream"]["properties"]) == {"project", "limit"}
    for name, schema in schemas.items():
        fields = _property_names(schema)
        assert not fields & {"agent", "argv", "worker", "timeout_ms", "max_output_bytes"}, name


def _property_names(schema: Any) -> set[str]:
    """Every property name anywhere in a JSON schema ($defs included)."""
    names: set[str] = set()
    if isinstance(schema, dict):
        properties = schema.get("properties")
        if isinstance(properties, dict):
            names |= set(properties)
        for value in schema.values():
            names |= _property_names(value)
    elif isinstance(schema, list):
        for value in schema:
            names |= _property_names(value)
    return names
