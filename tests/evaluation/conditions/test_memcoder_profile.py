"""The memcoder profile against MemCoder's captured interface: the stand-in serves exactly the
captured schemas and refuses what MemCoder refuses; the profile decodes MemCoder's real answers;
a whole conditions run (seeding, four conditions, Dream, finalize, evaluate) completes against
the stand-in with no memory failure and every unsupported operation named."""

import json
import sys
from pathlib import Path

import anyio
import pytest

from lorelab.evaluation.conditions._memory import LORELAB_PROFILE, MEMCODER_PROFILE, open_memory
from lorelab.evaluation.conditions._profiles import (
    MemoryDecodeError,
    MemoryUnsupported,
    decode_brief,
    decode_start,
)
from lorelab.testing.memcoder import MemCoderStandIn, ToolError, check_memcoder_row, load_tools
from tests.support.conditions import mini_seed, run_mini

DATA = Path(__file__).resolve().parent / "data"
CAPTURED = DATA / "memcoder"
MINI_HOST = DATA / "mini_host.py"
CALLS = json.loads((CAPTURED / "calls.json").read_text(encoding="utf-8"))["calls"]


def _captured(label: str) -> dict:
    return next(call for call in CALLS if call["label"] == label)


def _standin_argv(state: Path) -> list[str]:
    return [sys.executable, "-m", "lorelab.testing.memcoder", "--state", str(state)]


# ---------------------------------------------------------------- the stand-in


def test_the_stand_in_lists_exactly_the_tools_memcoder_listed(tmp_path):
    async def listed():
        async with open_memory(
            MEMCODER_PROFILE,
            _standin_argv(tmp_path / "state.json"),
            home=None,
            cwd=tmp_path,
            stderr_path=tmp_path / "err",
        ) as memory:
            return await memory.client.list_tools()

    tools = anyio.run(listed).tools
    served = [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools]
    captured = json.loads((CAPTURED / "tools_list.json").read_text(encoding="utf-8"))["tools"]
    assert served == captured
    assert len(served) == 44
    assert load_tools() == captured


@pytest.mark.parametrize("label", ["unknown key refused", "missing key refused"])
def test_the_stand_in_refuses_arguments_as_memcoder_does(label):
    call = _captured(label)
    assert call["isError"] is True
    with pytest.raises(ToolError) as refused:
        MemCoderStandIn().call(call["tool"], call["arguments"])
    # Same header line ("N validation error(s) for call[tool]") and the same keys named.
    assert str(refused.value).splitlines()[0] == call["text"][0].splitlines()[0]
    for line in call["text"][0].splitlines():
        if line and not line.startswith(" "):
            assert line in str(refused.value)


def test_the_stand_in_keeps_records_per_agent_id_and_assigns_memcoder_ids():
    stand_in = MemCoderStandIn()
    record = _captured("record a seed experience")["arguments"]
    answer = json.loads(stand_in.call("memcoder_record", record))
    memory_id = answer["recorded"]["experience"]["id"]
    assert memory_id.startswith("mem_")
    assert len(memory_id) == len("mem_") + 32
    mine = json.loads(
        stand_in.call(
            "memcoder_prepare",
            {"problem": record["task"], "agent_id": record["agent_id"], "detail_level": "full"},
        )
    )
    default_owner = json.loads(
        stand_in.call("memcoder_prepare", {"problem": record["task"], "detail_level": "full"})
    )
    assert [item["id"] for item in mine["experiences"]] == [memory_id]
    assert default_owner["experiences"] == []


def test_the_stand_in_stores_no_experience_for_failed_evidence_like_memcoder():
    call = _captured("record without passed evidence")
    answer = json.loads(MemCoderStandIn().call(call["tool"], call["arguments"]))
    assert answer["experience_recorded"] is call["decodedResult"]["experience_recorded"] is False
    assert answer["rejected"] == call["decodedResult"]["rejected"]


def test_the_stand_in_refuses_a_one_word_skill_name_and_an_unknown_influence():
    stand_in = MemCoderStandIn()
    for label in (
        "promote with a one-word name refused",
        "skill credit refuses an unknown influence",
    ):
        call = _captured(label)
        with pytest.raises(ToolError) as refused:
            stand_in.call(call["tool"], call["arguments"])
        assert str(refused.value) == call["text"][0]


def test_memcoder_row_checks_refuse_null_relevance_and_accept_it_left_out():
    refused = _captured("evaluate refuses a null retrieval_relevant")
    with pytest.raises(ValueError, match="must be boolean when provided"):
        check_memcoder_row(refused["arguments"]["runs"][0])
    for row in _captured("evaluate accepts the key left out")["arguments"]["runs"]:
        check_memcoder_row(row)


# ---------------------------------------------------------------- decoding real answers


def test_a_real_memcoder_brief_decodes_to_its_served_experience():
    answer = _captured("prepare (full) with a seed's own task text")
    brief = MEMCODER_PROFILE.decode("prepare", answer["structuredContent"])
    evidence = answer["decodedResult"]["brief"]["evidence"]
    assert [item["id"] for item in brief["experiences"]] == [evidence[0]["id"]]
    assert brief["empty"] is False
    assert "shop/money.py" in brief["text"]
    assert evidence[0]["id"] in brief["text"]


def test_a_real_memcoder_brief_without_evidence_is_an_empty_brief():
    answer = _captured("prepare (brief)")
    brief = MEMCODER_PROFILE.decode("prepare", answer["structuredContent"])
    assert brief["empty"] is True
    assert brief["text"] is None
    assert "No trusted memory" in brief["reason"]


def test_a_real_memcoder_plan_decodes_its_id_from_plan_id_and_its_steps_from_action():
    answer = _captured("start")
    plan = MEMCODER_PROFILE.decode("start", answer["structuredContent"])
    assert plan["plan_id"] == answer["decodedResult"]["plan"]["id"]
    assert plan["plan_id"].startswith("plan_")
    assert plan["skill_id"] is None
    assert [step["action"] for step in plan["steps"]] == [
        step["action"] for step in answer["decodedResult"]["plan"]["steps"]
    ]
    assert decode_start(answer["decodedResult"]) == plan


def test_real_record_promote_dream_and_verify_answers_decode_to_memcoders_ids():
    record = _captured("record a seed experience")
    assert (
        MEMCODER_PROFILE.decode("record", record["structuredContent"])["id"]
        == (record["decodedResult"]["recorded"]["experience"]["id"])
    )
    rejected = MEMCODER_PROFILE.decode(
        "record", _captured("record without passed evidence")["structuredContent"]
    )
    assert rejected["id"] is None
    assert rejected["rejected"]
    promote = _captured("promote the seed Skill")
    assert (
        MEMCODER_PROFILE.decode("promote_skill", promote["structuredContent"])["id"]
        == (promote["decodedResult"]["id"])
    )
    dream = MEMCODER_PROFILE.decode("dream", _captured("dream run")["structuredContent"])
    assert [c["id"] for c in dream["candidates"]] == [
        c["candidate_id"] for c in _captured("dream run")["decodedResult"]["candidates"]
    ]
    verify = _captured("dream verify")
    verdict = MEMCODER_PROFILE.decode("verify_candidate", verify["structuredContent"])
    assert verdict["passed"] is True
    assert verdict["promoted_id"] == verify["decodedResult"]["promoted"]["record_id"]
    assert verdict["promoted_kind"] == "principle"


def test_an_answer_that_is_not_memcoders_result_string_is_a_decode_error():
    with pytest.raises(MemoryDecodeError, match="result"):
        MEMCODER_PROFILE.decode("prepare", {"brief": {}})
    with pytest.raises(MemoryDecodeError, match="not JSON"):
        MEMCODER_PROFILE.decode("prepare", {"result": "{not json"})
    with pytest.raises(MemoryDecodeError, match="plan has no id"):
        decode_start({"plan": {"steps": []}, "brief": {}})
    with pytest.raises(MemoryDecodeError):
        decode_brief(["not", "a", "brief"])


# ---------------------------------------------------------------- requests


def test_every_memcoder_request_carries_the_one_agent_id():
    seed = mini_seed()["experiences"][0]
    requests = [
        MEMCODER_PROFILE.request("prepare", {"task": "t", "include_skills": False}),
        MEMCODER_PROFILE.request("start", {"task": "t"}),
        MEMCODER_PROFILE.request("record", seed),
        MEMCODER_PROFILE.request("dream", {}),
        MEMCODER_PROFILE.request("verify_candidate", {"candidate_id": "d", "checks": []}),
        MEMCODER_PROFILE.request(
            "report_outcome", {"plan_id": "p", "passed": True}, {"skill_id": "mem_1"}
        ),
    ]
    assert {request["agent_id"] for request in requests} == {"lorelab-eval"}


def test_a_seed_experience_becomes_a_memcoder_record_with_evidence_from_its_commands():
    seed = mini_seed()["experiences"][0]
    request = MEMCODER_PROFILE.request("record", seed, {"evidence_source": "seed file"})
    tool = next(tool for tool in load_tools() if tool["name"] == "memcoder_record")
    assert set(request) <= set(tool["inputSchema"]["properties"])
    assert set(tool["inputSchema"]["required"]) <= set(request)
    checks = request["evidence"]["checks"]
    assert checks[0] == {
        "name": "verify command",
        "kind": "test",
        "status": "passed",
        "command": "python check.py s1",
        "output": "exit code 0 (seed file)",
    }
    assert [check["command"] for check in checks[1:]] == [
        "grep -rn done .",
        "python -m compileall -q .",
    ]
    assert request["files"] == ["done/s1"]


def test_records_memcoder_cannot_store_are_unsupported_not_failures():
    failed = {**mini_seed()["experiences"][0], "outcome": "failed"}
    with pytest.raises(MemoryUnsupported, match="no outcome field"):
        MEMCODER_PROFILE.request("record", failed)
    with_plan = MEMCODER_PROFILE.request("record", {**failed, "plan_id": "plan_1"})
    assert with_plan["evidence"]["checks"][0]["status"] == "passed"
    assert with_plan["plan_id"] == "plan_1"
    with pytest.raises(MemoryUnsupported, match="needs at least one file"):
        MEMCODER_PROFILE.request("record", {**mini_seed()["experiences"][0], "files": []})
    with pytest.raises(MemoryUnsupported, match="credits a Skill"):
        MEMCODER_PROFILE.request("report_outcome", {"plan_id": "p", "passed": True}, {})
    with pytest.raises(MemoryUnsupported, match="no show tool"):
        MEMCODER_PROFILE.request("show", {"id": "x"})


def test_the_lorelab_profile_passes_requests_and_results_through():
    arguments = {"task": "t", "include_skills": True, "budget_tokens": 10}
    assert LORELAB_PROFILE.request("prepare", arguments, {"ignored": 1}) == arguments
    assert LORELAB_PROFILE.decode("prepare", {"text": "x"}) == {"text": "x"}
    with pytest.raises(MemoryDecodeError, match="expected an object"):
        LORELAB_PROFILE.decode("prepare", [1])


def test_each_profile_names_its_unsupported_operations_with_a_reason():
    named = {entry.operation: entry.reason for entry in MEMCODER_PROFILE.unsupported_operations()}
    assert set(named) == {"check", "promote_candidate", "show", "list", "lock_set", "lock_clear"}
    assert "runner runs each candidate's checks" in named["check"]
    lorelab = {entry.operation for entry in LORELAB_PROFILE.unsupported_operations()}
    assert lorelab == {"verify_candidate"}


# ---------------------------------------------------------------- a whole run


@pytest.fixture(scope="module")
def memcoder_run(tmp_path_factory):
    base = tmp_path_factory.mktemp("memcoder-mini")
    return run_mini(base, _standin_argv(base / "memcoder-state.json"))


def _read(run, name):
    return json.loads((run["output"] / name).read_text())


def test_a_memcoder_run_completes_every_condition_with_no_memory_failure(memcoder_run):
    assert memcoder_run["run"].exit_code == 0, memcoder_run["run"].output
    summary = _read(memcoder_run, "run.json")
    assert summary["memoryFailures"] == 0
    runs = _read(memcoder_run, "beta2_runs.json")["runs"]
    assert len(runs) == 40
    assert {run["condition"] for run in runs} == {
        "baseline",
        "memory_guided",
        "skill_planned",
        "dreaming",
    }
    assert not [run for run in runs if run["host_failure"]]
    planned = [run for run in runs if run["condition"] == "skill_planned"]
    assert all(run["plan_id"].startswith("plan_") for run in planned)


def test_memcoder_seeding_records_its_own_ids_mapped_to_the_declared_ones(memcoder_run):
    seeding = _read(memcoder_run, "preflight.json")["seeding"]
    ids = seeding["ids"]
    assert set(ids) == {"exp-1", "exp-2", "skill-1"}
    assert all(value.startswith("mem_") for value in ids.values())
    assert seeding["skill"]["id"] == ids["skill-1"]
    assert seeding["skill"]["name"] == "mark done"
    assert seeding["skill"]["seedName"] == "mark-done"
    assert [entry.get("declaredId") for entry in seeding["experiences"]] == ["exp-1", "exp-2"]
    # The seed Skill MemCoder plans from is the one seeding promoted.
    runs = _read(memcoder_run, "beta2_runs.json")["runs"]
    planned_skills = {run["skill_id"] for run in runs if run["condition"] == "skill_planned"}
    assert planned_skills == {ids["skill-1"]}


def test_memcoder_dream_candidates_are_checked_by_the_runner_and_promoted_as_principles(
    memcoder_run,
):
    dream = _read(memcoder_run, "dream.json")
    assert dream["supported"] is True
    assert dream["toolErrors"] == 0
    assert dream["candidateIds"]
    check = dream["checks"][0]
    assert [item["command"] for item in check["results"]] == [
        "grep -rn done .",
        "python -m compileall -q .",
    ]
    assert all(item["exitCode"] == 0 for item in check["results"])
    # Run as verify commands are, each says the confinement it really got.
    assert all(item["sandbox"] in ("bubblewrap", "partial", "none") for item in check["results"])
    assert all(len(item["outputSha256"]) == 64 for item in check["results"])
    assert check["passed"] is True
    assert check["promotedKind"] == "principle"
    assert dream["promoted"][check["candidateId"]].startswith("mem_")


def test_every_unsupported_memcoder_operation_is_named_in_the_receipts(memcoder_run):
    preflight = _read(memcoder_run, "preflight.json")
    named = {entry["operation"] for entry in preflight["memory"]["unsupported"]}
    assert named == {"check", "promote_candidate", "show", "list", "lock_set", "lock_clear"}
    assert preflight["memory"]["agentId"] == "lorelab-eval"
    assert "run by the runner" in preflight["memory"]["dreamChecks"]
    assert preflight["seedsInMemory"]["checked"] is False
    assert preflight["lock"]["method"] == "none"
    finalize = _read(memcoder_run, "finalize.json")
    assert {entry["operation"] for entry in finalize["unsupportedOperations"]} == named


def test_memcoder_finalize_records_outcomes_and_lists_what_it_could_not(memcoder_run):
    assert memcoder_run["finalize"].exit_code == 0, memcoder_run["finalize"].output
    finalize = _read(memcoder_run, "finalize.json")
    assert finalize["errors"] == []
    assert finalize["recorded"]
    assert all(entry["experienceId"].startswith("mem_") for entry in finalize["recorded"])
    # Skill-planned runs credit the seed Skill (present, not claimed as causal).
    credited = [entry for entry in finalize["outcomes"] if entry.get("credit")]
    assert credited
    runs = _read(memcoder_run, "beta2_runs.json")["runs"]
    failed_memory_runs = [r for r in runs if r["condition"] != "baseline" and not r["passed"]]
    unsupported = finalize["unsupported"]
    assert len(unsupported) >= len([r for r in failed_memory_runs if not r["plan_id"]])
    assert all(entry["reason"] for entry in unsupported)


def test_evaluate_gives_a_decision_on_a_memcoder_run(memcoder_run):
    assert memcoder_run["evaluate"].exit_code == 0, memcoder_run["evaluate"].output
    report = json.loads(memcoder_run["evaluate"].output)
    assert report["decision"]["verdict"] in ("advance", "do-not-advance", "inconclusive")
    assert report["holdouts"] == ["h1", "h2", "h3", "h4", "h5", "h6"]


def test_a_memcoder_runs_file_passes_memcoders_own_row_checks(memcoder_run):
    runs = _read(memcoder_run, "beta2_runs.json")["runs"]
    baseline = [run for run in runs if run["condition"] == "baseline"]
    assert baseline
    assert all("retrieval_relevant" not in run for run in baseline)
    for run in runs:
        check_memcoder_row(run)
    answer = json.loads(MemCoderStandIn().call("memcoder_evaluate", {"runs": runs}))
    assert answer["conditions"]["baseline"]["runs"] == 10


def test_a_memcoder_plan_reaches_the_host_as_its_skills_instructions(memcoder_run):
    runs = _read(memcoder_run, "beta2_runs.json")["runs"]
    planned = next(r for r in runs if r["condition"] == "skill_planned" and r["task_id"] == "h1")
    receipt = json.loads((memcoder_run["output"] / planned["receipt"]).read_text())
    text = receipt["guidance"]["payload"]["text"]
    assert text.startswith(f"Plan {planned['plan_id']} from Skill {planned['skill_id']}:")
    assert "\n1. grep -rn done .\n2. python -m compileall -q .\n" in text
    assert "3. Run the skill's required verification in the current project. (verify: " in text


def test_a_dream_candidate_whose_checks_fail_is_rejected_and_not_promoted():
    stand_in = MemCoderStandIn()
    owner = {"agent_id": "lorelab-eval"}
    for task in ("round the line totals half up", "round the discount totals half up"):
        record = {
            **_captured("record a seed experience")["arguments"],
            "task": task,
            **owner,
        }
        stand_in.call("memcoder_record", record)
    dream = json.loads(stand_in.call("memcoder_dream", {"action": "run", **owner}))
    candidate = dream["created"][0]["candidate_id"]
    failed = [{"name": "python -m compileall -q shop", "passed": False, "evidence": "exit 1"}]
    verdict = json.loads(
        stand_in.call(
            "memcoder_dream",
            {"action": "verify", "candidate_id": candidate, "checks": failed, **owner},
        )
    )
    assert verdict["candidate"]["status"] == "rejected"
    assert verdict["promoted"] is None
    decoded = MEMCODER_PROFILE.decode("verify_candidate", {"result": json.dumps(verdict)})
    assert decoded["passed"] is False
    assert decoded["promoted_id"] is None
    with pytest.raises(ToolError, match="no longer eligible"):
        stand_in.call(
            "memcoder_dream",
            {"action": "verify", "candidate_id": candidate, "checks": failed, **owner},
        )
