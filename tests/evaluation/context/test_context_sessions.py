"""Import and scan of recorded Claude Code and Codex CLI sessions.

The transcripts are written by ``tests.support.sessions`` in the published formats; its
docstring names the sources each format imitates (Claude Code: DRMacIver/claude-reliability
``notes/transcript-format.md``, chrisguillory/claude-session-mcp ``CLAUDE.md``,
alicoding/claude-parser ``docs/JSONL-STRUCTURE.md``; Codex CLI: openai/codex
``codex-rs/protocol/src/protocol.rs``, ``RolloutItem``).
"""

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from lorelab.cli.main import app
from lorelab.errors import InputFileError, OutputExistsError, SchemaError
from lorelab.evaluation.context import (
    SESSION_LIMIT,
    evaluate_fixtures,
    import_session,
    parse_fixture,
    parse_session,
    scan_sessions,
    session_fixture,
)
from tests.support.sessions import SID, Claude, Codex

REPO = Path(__file__).resolve().parents[3]
SESSIONS = REPO / "examples" / "context" / "sessions"


def cli(*args: object):
    return CliRunner().invoke(app, ["eval", "context", *map(str, args)])


def row(path: Path, **kwargs):
    result = scan_sessions([str(path)], **kwargs)
    assert len(result.receipt.sessions) == 1, result.receipt.refused
    return result.receipt.sessions[0]


def claude(path: Path):
    return parse_session(str(path), agent="claude-code", limit=SESSION_LIMIT, keep_text=True)


# --- boundaries from recorded events ----------------------------------------------------------


def test_a_top_level_compact_boundary_and_its_summary_are_one_compaction(tmp_path):
    path = Claude().user("go").say("ok").compact().say("resumed").write(tmp_path / "s.jsonl")
    assert row(path).compactions == 1


def test_the_older_marker_nested_under_message_is_a_compaction(tmp_path):
    path = Claude().user("go").compact(nested=True).say("resumed").write(tmp_path / "s.jsonl")
    assert row(path).compactions == 1


def test_a_compact_summary_recorded_without_a_boundary_record_is_a_compaction(tmp_path):
    path = Claude().user("go").compact_summary().say("resumed").write(tmp_path / "s.jsonl")
    assert row(path).compactions == 1


def test_compaction_mentioned_only_in_prose_is_no_boundary(tmp_path):
    session = Claude().user("go").say("The conversation was compacted; I restarted the agent.")
    path = session.write(tmp_path / "s.jsonl")
    scanned = row(path)
    assert (scanned.compactions, scanned.restarts, scanned.handoffs) == (0, 0, 0)


def test_a_session_with_no_boundary_has_no_reruns_and_no_required_boundaries(tmp_path):
    session = Claude().user("go").bash("make test", exit_code=2).bash("make test", exit_code=2)
    path = session.say("done").write(tmp_path / "s.jsonl")
    scanned = row(path)
    assert (scanned.compactions, scanned.repeated_failures, scanned.reruns_passed) == (0, 0, 0)
    assert scanned.failed_commands == 2
    fixture = session_fixture(claude(path))
    assert fixture.required_boundaries == []
    assert fixture.forbidden_commands == ["make test"]


# --- repeated failures ------------------------------------------------------------------------


def test_compaction_in_the_middle_of_a_bash_retry_is_a_repeated_failure(tmp_path):
    session = Claude().user("fix the tests").bash("pytest -x", exit_code=1, output="E boom")
    session.bash("cat setup.cfg").compact().bash("pytest  -x ", exit_code=1).say("still red")
    scanned = row(session.write(tmp_path / "s.jsonl"))
    assert scanned.repeated_failures == 1
    assert scanned.reruns_passed == 0
    (rerun,) = scanned.reruns
    assert rerun.command == "pytest -x"
    assert rerun.outcome == "failed"
    assert rerun.turns_between == 1  # the `cat setup.cfg` call in between


def test_a_rerun_that_passes_after_the_boundary_is_a_fix_being_verified(tmp_path):
    session = Claude().user("go").bash("make test", exit_code=2).compact()
    session.bash("make test", exit_code=0).say("green")
    scanned = row(session.write(tmp_path / "s.jsonl"))
    assert (scanned.repeated_failures, scanned.reruns_passed) == (0, 1)


def test_a_rerun_before_any_boundary_is_no_repeat_after_a_boundary(tmp_path):
    session = Claude().user("go").bash("make test", exit_code=2).bash("make test", exit_code=2)
    session.compact().say("done")
    scanned = row(session.write(tmp_path / "s.jsonl"))
    assert (scanned.repeated_failures, scanned.reruns_passed) == (0, 0)


def test_codex_exit_codes_come_from_exec_command_end_and_compaction_is_counted_once(tmp_path):
    session = Codex().turn().user("fix migrations").shell("make migrate", 2).tokens(100, 7)
    session.compact().turn().shell("make migrate", 2).shell("make migrate", 0).say("fixed")
    path = session.tokens(250, 31).write(tmp_path / "rollout.jsonl")
    scanned = row(path)
    assert scanned.agent == "codex"
    assert scanned.compactions == 1
    assert (scanned.repeated_failures, scanned.reruns_passed) == (1, 1)
    assert (scanned.input_tokens, scanned.output_tokens) == (250, 31)
    assert scanned.models == ["gpt-5-codex"]
    assert scanned.agent_version == "0.58.0"


# --- handoffs and restarts --------------------------------------------------------------------


def test_a_subagent_with_its_own_compaction_is_a_child_trace(tmp_path):
    session = Claude().user("regenerate the lockfile").bash("npm run build", exit_code=2)
    session.task()
    child = Claude(sidechain=True)
    child.clock = session.clock
    child.user("regenerate").bash("npm run build", exit_code=2).compact().say("regenerated")
    session.records += child.records
    session.clock = child.clock
    session.task_result().bash("npm run build").say("built")
    path = session.write(tmp_path / "s.jsonl")
    scanned = row(path)
    assert (scanned.handoffs, scanned.compactions) == (1, 1)
    # The child re-ran the parent's failure after the handoff: a repeat; the parent's final
    # build passes.
    assert (scanned.repeated_failures, scanned.reruns_passed) == (1, 1)
    fixture = session_fixture(claude(path))
    (handoff,) = [e for e in fixture.trace if e.kind == "boundary"]
    assert handoff.boundary == "child_handoff"
    assert handoff.child is not None
    assert handoff.child.complete
    assert [e.boundary for e in handoff.child.trace if e.kind == "boundary"] == ["compaction"]


def test_a_subagent_file_of_its_own_joins_its_session_as_a_handoff(tmp_path):
    Claude().user("go").task().task_result().say("done").write(tmp_path / "main.jsonl")
    side = Claude(sidechain=True).user("sub task").bash("ls").compact().say("done")
    side.write(tmp_path / "agent-1234.jsonl")
    result = scan_sessions([str(tmp_path)])
    (scanned,) = result.receipt.sessions
    assert (scanned.session_id, scanned.handoffs, scanned.compactions) == (SID, 1, 1)
    assert len(scanned.files) == 2


def test_a_session_resumed_in_a_new_file_is_a_restart(tmp_path):
    Claude().user("go").bash("make test", exit_code=2).write(tmp_path / "a.jsonl")
    later = Claude()
    later.clock = 500
    later.bash("make test", exit_code=2).say("still failing").write(tmp_path / "b.jsonl")
    result = scan_sessions([str(tmp_path)])
    (scanned,) = result.receipt.sessions
    assert (scanned.restarts, scanned.repeated_failures) == (1, 1)
    imported = import_session(
        [str(tmp_path / "b.jsonl"), str(tmp_path / "a.jsonl")],
        agent="claude-code",
        output=str(tmp_path / "fixture.json"),
    )
    assert imported.fixture.required_boundaries == ["restart"]
    assert imported.fixture.provenance.source_digests == [f.sha256 for f in imported.session.files]


def test_a_codex_rollout_resumed_with_a_second_session_meta_is_a_restart(tmp_path):
    session = Codex().turn().shell("pytest", 1).meta().turn().shell("pytest", 1)
    scanned = row(session.write(tmp_path / "rollout.jsonl"))
    assert (scanned.restarts, scanned.repeated_failures) == (1, 1)


# --- input discipline -------------------------------------------------------------------------


def test_a_truncated_last_line_refuses_the_session_with_its_line_number(tmp_path):
    path = Claude().user("go").bash("make test").write(tmp_path / "s.jsonl")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 20])
    lines = path.read_bytes().count(b"\n") + 1
    with pytest.raises(SchemaError, match=rf"line {lines}: not valid JSON \(the last line is cut"):
        claude(path)
    result = cli("import", "--from", "claude-code", path, "--output", tmp_path / "f.json")
    assert result.exit_code == 2
    assert f"line {lines}" in result.output
    assert not (tmp_path / "f.json").exists()


def test_an_invalid_utf8_line_refuses_the_session_and_the_scan_names_it(tmp_path):
    path = Claude().user("go").say("fine").write(tmp_path / "bad.jsonl")
    lines = path.read_bytes().split(b"\n")
    lines[1] = lines[1].replace(b"fine", b"fi\xffne")
    path.write_bytes(b"\n".join(lines))
    Claude(session_id="other").user("go").write(tmp_path / "good.jsonl")
    result = scan_sessions([str(tmp_path)])
    assert [r.session_id for r in result.receipt.sessions] == ["other"]
    (refused,) = result.receipt.refused
    assert refused.path == str(path)
    assert "line 2: not valid UTF-8" in refused.reason
    assert refused.sha256 == __import__("hashlib").sha256(path.read_bytes()).hexdigest()
    assert result.exit_code == 1


def test_a_line_that_is_no_json_object_is_refused(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text('{"type": "user"}\n[1, 2]\n')
    with pytest.raises(SchemaError, match="line 2: not a JSON object"):
        claude(path)


def test_unknown_event_types_are_counted_and_named_in_the_receipt(tmp_path):
    session = Claude().user("go").raw({"type": "hologram", "sessionId": SID})
    session.raw({"type": "hologram", "sessionId": SID}).raw({"type": "telepathy"})
    (tmp_path / "in").mkdir()
    path = session.write(tmp_path / "in" / "s.jsonl")
    out = tmp_path / "receipts"
    scan_sessions([str(path)], output=str(out))
    data = json.loads((out / "context-scan.json").read_text())
    assert data["sessions"][0]["unknownEventTypes"] == {"hologram": 2, "telepathy": 1}
    fixture = session_fixture(claude(path))
    assert fixture.provenance.unknown_event_types == {"hologram": 2, "telepathy": 1}


def test_a_fifo_is_refused_not_waited_on(tmp_path):
    fifo = tmp_path / "s.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(InputFileError, match="is a FIFO"):
        claude(fifo)


@pytest.mark.slow
def test_a_40_mib_session_needs_max_bytes_within_the_ceiling(tmp_path):
    path = tmp_path / "big.jsonl"
    session = Claude().user("go").bash("make test", exit_code=2).compact()
    filler = "x" * 4000
    with path.open("w") as handle:
        for record in session.records:
            handle.write(json.dumps(record) + "\n")
        record = dict(session.records[0], message={"role": "user", "content": filler})
        line = json.dumps(record) + "\n"
        for _ in range(40 * 1024 * 1024 // len(line) + 1):
            handle.write(line)
        handle.write(json.dumps(Claude().bash("make test", exit_code=2).records[0]) + "\n")
    assert path.stat().st_size > 40 * 1024 * 1024
    with pytest.raises(InputFileError, match="exceeds the session limit of 33554432 bytes"):
        claude(path)
    result = cli("scan", path, "--max-bytes", 64 * 1024 * 1024, "--json")
    assert result.exit_code == 0, result.output[-500:]
    data = json.loads(result.output)
    assert data["sessions"][0]["compactions"] == 1
    over = cli("scan", path, "--max-bytes", 2 * 1024**3)
    assert over.exit_code == 2


# --- import -----------------------------------------------------------------------------------


def test_import_keeps_order_outcomes_provenance_and_usage_and_leaves_labels_to_a_person(
    tmp_path,
):
    usage = {"input_tokens": 100, "cache_read_input_tokens": 50, "output_tokens": 9}
    session = Claude().user("what port?").bash("make test", exit_code=2, output="E refused")
    # One API message written as two records repeats its usage: it is counted once.
    session.say("looking", usage=usage)
    session.records.append(json.loads(json.dumps(session.records[-1])))
    session.compact().bash("make test", exit_code=0).say("port 5432", model="claude-opus-4-1")
    path = session.write(tmp_path / "s.jsonl")
    out = tmp_path / "fixture.json"
    result = cli("import", "--from", "claude-code", path, "--output", out)
    assert result.exit_code == 0, result.output
    fixture = parse_fixture(out.read_bytes(), str(out))
    kinds = [(e.kind, e.author) for e in fixture.trace]
    assert kinds == [
        ("message", "user"),
        ("command", "agent"),
        ("message", "tool"),
        ("message", "agent"),
        ("message", "agent"),
        ("boundary", "system"),
        ("message", "system"),
        ("command", "agent"),
        ("message", "tool"),
        ("message", "agent"),
        ("answer", "agent"),
    ]
    failed, passed = [e for e in fixture.trace if e.kind == "command"]
    assert (failed.exit_code, failed.error, passed.exit_code, passed.error) == (
        2,
        True,
        None,
        False,
    )
    assert fixture.trace[-2].model == "claude-opus-4-1"
    assert fixture.expected_facts == []
    assert fixture.labels.model_dump(by_alias=True) == {
        "expected": None, "status": "unlabelled", "forbiddenCommands": "proposed"
    }  # fmt: skip
    assert fixture.forbidden_commands == ["make test"]
    assert fixture.required_boundaries == ["compaction"]
    p = fixture.provenance
    assert (p.agent, p.agent_version, p.session_id, p.cwd) == (
        "claude-code", "2.0.14", SID, "/home/dev/project"
    )  # fmt: skip
    assert p.model is None  # two models: per event, not one for the record
    assert p.source_digests == [__import__("hashlib").sha256(path.read_bytes()).hexdigest()]
    # Three messages with the default usage (10 in, 5 out) and the repeated one counted once
    # (input, cache creation and cache read tokens are all input).
    assert (fixture.usage.input_tokens, fixture.usage.output_tokens) == (3 * 10 + 150, 3 * 5 + 9)
    assert fixture.usage.cost_usd is None
    assert stat.S_IMODE(out.stat().st_mode) == 0o600


def test_import_redacts_secrets_in_commands_and_text(tmp_path):
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    session = Claude().user(f"use token {secret}").bash(f"GITHUB_TOKEN={secret} gh pr list")
    path = session.say("done").write(tmp_path / "s.jsonl")
    out = tmp_path / "fixture.json"
    import_session([str(path)], agent="claude-code", output=str(out))
    assert secret not in out.read_text()


def test_import_never_overwrites_and_refuses_a_format_mismatch(tmp_path):
    path = Codex().turn().shell("ls").write(tmp_path / "rollout.jsonl")
    out = tmp_path / "fixture.json"
    out.write_text("keep")
    with pytest.raises(OutputExistsError):
        import_session([str(path)], agent="codex", output=str(out))
    assert out.read_text() == "keep"
    with pytest.raises(SchemaError, match="in the codex format, not claude-code"):
        import_session([str(path)], agent="claude-code", output=str(tmp_path / "other.json"))


def test_an_unlabelled_fixture_is_scored_mechanically_and_the_receipt_says_facts_were_not(
    tmp_path,
):
    session = Claude().user("go").bash("make test", exit_code=2).compact()
    session.bash("make  test", exit_code=2).say("gave up")
    (tmp_path / "in").mkdir()
    path = session.write(tmp_path / "in" / "s.jsonl")
    fixture_path = tmp_path / "in" / "fixture.json"
    import_session([str(path)], agent="claude-code", output=str(fixture_path))
    result = evaluate_fixtures([str(fixture_path)], output=str(tmp_path / "out"))
    (record,) = result.receipt.records
    assert record.facts_scored is False
    assert record.qualification.scoring == "mechanical"
    assert (record.label, record.label_agrees) == (None, None)
    # The proposed forbidden command matches after whitespace normalisation, as the scan does.
    assert record.failures.forbidden_retries == 1
    assert record.verdict == "FAIL"
    assert result.exit_code == 1
    markdown = (tmp_path / "out" / "context-receipt.md").read_text()
    assert "FAIL (facts not scored)" in markdown
    shown = cli("run", fixture_path, "--output", tmp_path / "out2")
    assert "[unlabelled: facts not scored]" in shown.output


def test_labels_status_and_expected_must_agree():
    base = json.loads((REPO / "examples/context/pass-compaction-test-database.json").read_text())
    base["labels"] = {"expected": None}
    with pytest.raises(SchemaError, match=r"a labelled fixture needs labels\.expected"):
        parse_fixture(json.dumps(base).encode(), "f.json")
    base["labels"] = {"expected": "PASS", "status": "unlabelled"}
    with pytest.raises(SchemaError, match=r"an unlabelled fixture has labels\.expected null"):
        parse_fixture(json.dumps(base).encode(), "f.json")


# --- round trip -------------------------------------------------------------------------------


HAND_WRITTEN = {
    "schemaVersion": 1,
    "id": "hand-written",
    "task": "fix the tests",
    "expectedFacts": [],
    "forbiddenCommands": ["pytest -x"],
    "requiredBoundaries": ["compaction"],
    "trace": [
        {"index": 0, "author": "user", "kind": "message", "text": "fix the tests"},
        {"index": 1, "author": "agent", "kind": "command", "command": "pytest -x", "exitCode": 1},
        {"index": 2, "author": "agent", "kind": "command", "command": "cat setup.cfg",
         "exitCode": 0},
        {"index": 3, "author": "system", "kind": "boundary", "boundary": "compaction"},
        {"index": 4, "author": "agent", "kind": "command", "command": "pytest -x", "exitCode": 1},
        {"index": 5, "author": "agent", "kind": "command", "command": "pytest -x -p no:cov",
         "exitCode": 0},
        {"index": 6, "author": "agent", "kind": "command", "command": "pytest -x", "exitCode": 0},
        {"index": 7, "author": "agent", "kind": "message", "text": "green"},
        {"index": 8, "author": "agent", "kind": "answer", "facts": [], "claims": []},
    ],
    "complete": True,
    "labels": {"expected": None, "status": "unlabelled", "forbiddenCommands": "proposed"},
    "provenance": {"synthetic": True},
}  # fmt: skip


def test_import_score_scan_round_trip_equals_a_hand_written_fixture_of_the_same_session(tmp_path):
    session = Claude().user("fix the tests").bash("pytest -x", exit_code=1).bash("cat setup.cfg")
    session.compact(summary=False).bash("pytest -x", exit_code=1)
    session.bash("pytest -x -p no:cov").bash("pytest -x").say("green")
    (tmp_path / "s").mkdir()
    (tmp_path / "f").mkdir()
    path = session.write(tmp_path / "s" / "session.jsonl")
    imported = tmp_path / "f" / "imported.json"
    hand = tmp_path / "f" / "hand.json"
    hand.write_text(json.dumps(HAND_WRITTEN))
    assert cli("import", "--from", "claude-code", path, "--output", imported).exit_code == 0

    scored = {}
    for name, fixture in (("imported", imported), ("hand", hand)):
        result = evaluate_fixtures([str(fixture)], output=str(tmp_path / f"out-{name}"))
        scored[name] = result.receipt.records[0].failures.as_dict()
    assert scored["imported"] == scored["hand"]
    assert scored["hand"]["forbiddenRetries"] == 2

    keys = ("compactions", "restarts", "handoffs", "repeatedFailures", "rerunsPassed")
    result = cli("scan", path, imported, hand, "--json")
    rows = json.loads(result.output)["sessions"]
    counts = [{key: r[key] for key in keys} for r in rows]
    expected = {"compactions": 1, "restarts": 0, "handoffs": 0, "repeatedFailures": 1,
                "rerunsPassed": 1}  # fmt: skip
    assert counts == [expected, expected, expected]
    turns = [[x["turnsBetween"] for x in r["reruns"]] for r in rows]
    assert turns == [[1, 3]] * 3


# --- scan output and receipts -----------------------------------------------------------------


def test_scan_receipts_are_private_digest_every_input_and_hold_no_prompt_or_output(tmp_path):
    secret = "AKIA" + "IOSFODNN7EXAMPLE"
    session = (
        Claude()
        .user("PROMPT-CANARY please fix")
        .bash(f"AWS_ACCESS_KEY_ID={secret} make deploy", exit_code=1, output="OUTPUT-CANARY failed")
    )
    session.compact().bash(f"AWS_ACCESS_KEY_ID={secret} make deploy", exit_code=1)
    (tmp_path / "in").mkdir()
    path = session.write(tmp_path / "in" / "s.jsonl")
    codex = Codex().turn().user("PROMPT-CANARY").shell("ls").write(tmp_path / "in" / "r.jsonl")
    out = tmp_path / "receipts"
    result = cli("scan", tmp_path / "in", "--output", out)
    assert result.exit_code == 1, result.output
    assert stat.S_IMODE(out.stat().st_mode) == 0o700
    for name in ("context-scan.json", "context-scan.md"):
        assert stat.S_IMODE((out / name).stat().st_mode) == 0o600
        text = (out / name).read_text()
        for canary in ("PROMPT-CANARY", "OUTPUT-CANARY", secret):
            assert canary not in text
    data = json.loads((out / "context-scan.json").read_text())
    digests = {f["path"]: f["sha256"] for s in data["sessions"] for f in s["files"]}
    hashlib = __import__("hashlib")
    assert digests == {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in (path, codex)}
    (rerun,) = [r for s in data["sessions"] for r in s["reruns"]]
    assert "make deploy" in rerun["command"]
    assert secret not in rerun["command"]


def test_scan_json_has_the_documented_keys_and_a_table_with_totals(tmp_path):
    result = cli("scan", SESSIONS, "--json")
    data = json.loads(result.output)
    for session in data["sessions"]:
        assert {"sessionId", "compactions", "restarts", "handoffs", "repeatedFailures",
                "rerunsPassed"} <= set(session)  # fmt: skip
    table = cli("scan", SESSIONS)
    lines = table.stdout.splitlines()  # stderr holds the line that says why it exits 1
    assert lines[0].split()[:7] == ["session", "agent", "compactions", "restarts", "handoffs",
                                    "repeatedFailures", "rerunsPassed"]  # fmt: skip
    assert lines[-1].startswith("total (3 sessions)")
    assert table.exit_code == 1


def test_scan_output_inside_a_scanned_directory_is_refused(tmp_path):
    path = Claude().user("go").write(tmp_path / "s.jsonl")
    result = cli("scan", path, "--output", tmp_path / "receipts")
    assert result.exit_code == 2
    assert not (tmp_path / "receipts").exists()


def test_scan_is_quiet_on_stderr_when_stdout_is_not_a_terminal(tmp_path):
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "lorelab"), "eval", "context", "scan", str(SESSIONS)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    # No progress, only the one line that says why the scan exits 1.
    assert proc.stderr == (
        "lorelab: 2 of 3 sessions re-ran a command that had failed before a boundary, and it "
        "failed again (2 repeated failures)\n"
    )
    assert "total (3 sessions)" in proc.stdout


def test_a_scan_that_exits_1_says_why_on_screen(tmp_path):
    result = CliRunner().invoke(app, ["eval", "context", "scan", str(SESSIONS)])
    assert result.exit_code == 1
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("lorelab: 2 of 3 sessions re-ran a command")


def test_fixtures_still_score_without_naming_the_run_subcommand(tmp_path):
    fixture = REPO / "examples/context/pass-compaction-test-database.json"
    plain = cli(fixture, "--output", tmp_path / "a")
    named = cli("run", fixture, "--output", tmp_path / "b")
    assert plain.exit_code == named.exit_code == 0
    assert plain.output.splitlines()[0] == named.output.splitlines()[0]


def test_every_label_agreeing_is_said_and_a_fail_still_exits_1(tmp_path):
    fixtures = sorted((REPO / "examples/context").glob("*.json"))
    result = cli("run", *fixtures, "--output", tmp_path / "out")
    assert result.exit_code == 1
    assert "6 records: 2 PASS, 4 FAIL; every verdict agrees with its label; exit 1 because 4 " \
        "records FAIL" in result.output  # fmt: skip


def test_import_creates_missing_parent_directories_private(tmp_path):
    path = Codex().turn().shell("ls").write(tmp_path / "rollout.jsonl")
    out = tmp_path / "new" / "deeper" / "fixture.json"
    result = cli("import", "--from", "codex", path, "--output", out)
    assert result.exit_code == 0, result.output
    assert stat.S_IMODE(out.parent.stat().st_mode) == 0o700
    assert "1 proposed forbidden command;" not in result.output  # `ls` passed: none proposed
    assert "0 proposed forbidden commands;" in result.output


# A field that names a record, item, event, block or tool type is a string in both formats; a
# list or object there is an unknown type, counted by its JSON text, never a crash.
NOT_A_NAME = [["user"], {"type": "user"}]


@pytest.mark.parametrize("value", NOT_A_NAME)
def test_a_claude_type_that_is_not_a_string_is_counted_as_unknown(tmp_path, value):
    path = tmp_path / "claude.jsonl"
    lines = [
        {"type": value, "sessionId": SID},
        {"type": "assistant", "sessionId": SID, "message": {"content": [{"type": value}]}},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    session = parse_session(str(path), agent=None, limit=SESSION_LIMIT, keep_text=False)
    assert session.agent == "claude-code"
    assert session.unknown[str(value)] == 1
    assert session.unknown[f"content:{value}"] == 1


@pytest.mark.parametrize("value", NOT_A_NAME)
def test_a_codex_type_or_tool_name_that_is_not_a_string_is_counted_as_unknown(tmp_path, value):
    path = tmp_path / "rollout.jsonl"
    lines = [
        {"type": "session_meta", "payload": {"id": SID}},
        {"type": value, "payload": {}},
        {"type": "response_item", "payload": {"type": value}},
        {"type": "event_msg", "payload": {"type": value}},
        {
            "type": "response_item",
            "payload": {"type": "function_call", "name": value, "call_id": "c1"},
        },
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    session = parse_session(str(path), agent=None, limit=SESSION_LIMIT, keep_text=False)
    assert session.agent == "codex"
    assert session.unknown[str(value)] == 1
    assert session.unknown[f"response_item:{value}"] == 1
    assert session.unknown[f"event_msg:{value}"] == 1
    assert [event for event in session.events if event.kind == "command"] == []
