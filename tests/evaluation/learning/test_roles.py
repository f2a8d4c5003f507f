"""Per-role workers in the learning evaluation: assignment, kinds, evidence, identities, CLI."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from lorelab.cli.main import app
from lorelab.errors import InvalidInput, UsageError, WorkerUnavailable
from lorelab.evaluation.learning import get_dataset
from lorelab.evaluation.learning.controller import LearningRequest, resolve_settings, run_learning
from lorelab.evaluation.learning.manifest import LearningManifest
from lorelab.evaluation.learning.roles import (
    RoleAssignment,
    adapter_name,
    bind_roles,
    check_startable,
    identity_digest,
    worker_kind,
)
from lorelab.io import probe_sandbox
from lorelab.workers import WorkerBounds, WorkerIdentity, adapter_argv, resolve_agent

FIXTURE = tuple(adapter_argv("fixture"))
STATIC = tuple(adapter_argv("static"))
PYNGUIN = tuple(adapter_argv("pynguin"))


def _one_spec() -> LearningManifest:
    manifest = get_dataset("default")
    fixture = manifest.fixtures[0].model_copy(update={"defects": manifest.fixtures[0].defects[:1]})
    return manifest.model_copy(update={"fixtures": [fixture]})


def _request(agent=FIXTURE, **overrides) -> LearningRequest:
    values = {
        "manifest": _one_spec(),
        "dataset": "test",
        "agent": tuple(agent),
        "repeat": 1,
        "seed": 5,
        "stability_runs": 2,
        "bounds": WorkerBounds(timeout_ms=60_000),
    }
    values.update(overrides)
    return LearningRequest(**values)


# --- assignment and kinds ------------------------------------------------------------------


def test_every_role_defaults_to_the_agent_and_each_can_be_handed_to_another_worker():
    assignment = RoleAssignment.of(PYNGUIN, architect=STATIC, reviewer=STATIC)
    assert dict(assignment.items()) == {
        "architect": STATIC,
        "author": PYNGUIN,
        "reviewer": STATIC,
    }
    assert dict(RoleAssignment.of(FIXTURE).items()) == dict.fromkeys(
        ("architect", "author", "reviewer"), FIXTURE
    )


@pytest.mark.parametrize(
    ("argv", "kind"),
    [
        (FIXTURE, "protocol-fixture"),
        (tuple(adapter_argv("fixture-host")), "protocol-fixture"),
        (STATIC, "rule-based"),
        (PYNGUIN, "search-based"),
        (tuple(adapter_argv("claude")), "agent-cli"),
        ((sys.executable, "-mlorelab.workers.adapters.static"), "rule-based"),
        ((sys.executable, "-u", "-m", "lorelab.workers.adapters.codex"), "agent-cli"),
        ((sys.executable, "worker.py"), "external"),
        ((sys.executable, "-m", "lorelab.workers.adapters.nothing"), "external"),
        (("node", "static.js"), "external"),
    ],
)
def test_each_worker_has_a_kind(argv, kind):
    assert worker_kind(argv) == kind


def test_adapter_name_reads_only_the_module_python_runs():
    assert adapter_name((sys.executable, "-m", "lorelab.workers.adapters.static")) == "static"
    assert adapter_name((sys.executable, "script.py", "-m", "x")) is None
    assert adapter_name((sys.executable,)) is None


def test_the_fixture_roles_are_named():
    assignment = RoleAssignment.of(STATIC, author=FIXTURE)
    assert assignment.fixture_roles() == ["author"]
    assert RoleAssignment.of(PYNGUIN, architect=STATIC, reviewer=STATIC).fixture_roles() == []


# --- evidence kind -------------------------------------------------------------------------


def test_any_fixture_role_makes_the_run_protocol_fixture():
    settings, kind = resolve_settings(_request(agent=STATIC, author_agent=FIXTURE))
    assert kind == "protocol-fixture"
    assert settings.roles.author.kind == "protocol-fixture"
    assert settings.roles.architect.argv == list(STATIC)
    assert settings.roles.reviewer.kind == "rule-based"


def test_a_run_without_fixture_roles_is_live():
    _, kind = resolve_settings(
        _request(agent=PYNGUIN, architect_agent=STATIC, reviewer_agent=STATIC)
    )
    assert kind == "live"


def test_live_evidence_is_refused_when_a_role_is_the_fixture_and_the_role_is_named():
    request = _request(agent=PYNGUIN, reviewer_agent=FIXTURE, evidence_kind="live")
    with pytest.raises(UsageError, match="it plays the reviewer role"):
        resolve_settings(request)


# --- identities ----------------------------------------------------------------------------


def test_roles_sharing_a_worker_share_one_binding(tmp_path):
    identities = bind_roles(
        RoleAssignment.of(STATIC, author=FIXTURE), cwd=tmp_path, operator_identity="op"
    )
    assert identities.architect is identities.reviewer
    assert identities.author.declared_argv == list(FIXTURE)
    assert identity_digest(identities.architect) != identity_digest(identities.author)


def test_a_role_whose_worker_cannot_be_bound_is_named(tmp_path):
    missing = ("/nonexistent/python", "worker.py")
    with pytest.raises(InvalidInput, match=r"^reviewer worker: "):
        bind_roles(
            RoleAssignment.of(STATIC, reviewer=missing), cwd=tmp_path, operator_identity=None
        )


# --- end to end ----------------------------------------------------------------------------


def test_a_run_records_every_role_in_manifest_trials_and_summary(tmp_path):
    out = tmp_path / "out"
    outcome = run_learning(
        _request(agent=FIXTURE, architect_agent=STATIC, reviewer_agent=STATIC), out
    )
    assert outcome.summary is not None
    manifest = json.loads((out / "manifest.json").read_text())
    identities = manifest["roleIdentities"]
    assert set(identities) == {"architect", "author", "reviewer"}
    assert identities["architect"]["declaredArgv"] == list(STATIC)
    assert identities["author"]["declaredArgv"] == list(FIXTURE)
    assert manifest["workerIdentity"] == identities["author"]
    assert manifest["settings"]["roles"]["reviewer"] == {"argv": list(STATIC), "kind": "rule-based"}
    assert manifest["evidenceKind"] == "protocol-fixture"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["fixtureRoles"] == ["author"]
    assert summary["evidenceKind"] == "protocol-fixture"
    assert summary["paired"]["label"] == "not-evidence"
    assert "the protocol fixture plays the author role" in summary["paired"]["labelReason"]
    assert "(the protocol fixture plays the author role)" in (out / "summary.md").read_text()
    trials = sorted((out / "trials").iterdir())
    assert len(trials) == 2
    for path in trials:
        trial = json.loads(path.read_text())
        workers = trial["roleWorkers"]
        assert workers["architect"]["argv"] == list(STATIC)
        for role, binding in workers.items():
            identity = identities[role]
            # The digest is of the identity as manifest.json holds it (paths normalized).
            assert binding["identitySha256"] == identity_digest(identity)
            assert binding["identitySha256"] == identity_digest(
                WorkerIdentity.model_validate(identity)
            )
        receipts = trial["generation"]["roles"]
        assert [r["role"] for r in receipts] == ["architect", "author", "reviewer"]
        assert "rule-based worker" in receipts[0]["stderrTail"]
        assert "rule-based worker" in receipts[2]["stderrTail"]
        assert receipts[1]["evidenceKind"] == "protocol-fixture"
        assert trial["generation"]["review"]["verdict"] == "approve", trial["reason"]
        assert trial["status"] == "qualified", trial["reason"]


def test_both_arms_call_the_same_worker_in_each_role(tmp_path):
    out = tmp_path / "out"
    run_learning(_request(agent=FIXTURE, architect_agent=STATIC, reviewer_agent=STATIC), out)
    trials = [json.loads(path.read_text()) for path in sorted((out / "trials").iterdir())]
    assert sorted(trial["arm"] for trial in trials) == ["memory", "no-memory"]
    assert trials[0]["roleWorkers"] == trials[1]["roleWorkers"]
    for trial in trials:
        stderr = [receipt["stderrTail"] for receipt in trial["generation"]["roles"]]
        # The static worker answered architect and reviewer in both arms, the fixture the author.
        assert "rule-based worker" in stderr[0]
        assert "rule-based worker" not in stderr[1]
        assert "rule-based worker" in stderr[2]


def test_a_role_whose_worker_cannot_be_bound_stops_the_run_in_preflight_naming_it(tmp_path):
    out = tmp_path / "out"
    missing = (sys.executable, str(tmp_path / "absent-reviewer.py"))
    outcome = run_learning(_request(agent=FIXTURE, reviewer_agent=missing), out)
    assert outcome.exit_code == 3
    assert outcome.message.startswith("preflight failed: reviewer worker: ")
    preflight = json.loads((out / "preflight.json").read_text())
    assert preflight["ok"] is False
    assert preflight["error"].startswith("reviewer worker: ")
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["roleIdentities"] is None
    assert manifest["workerIdentity"] is None
    assert manifest["settings"]["roles"]["reviewer"]["argv"] == list(missing)
    assert not (out / "trials").exists()


CHANGING_REVIEWER = textwrap.dedent(
    """
    import subprocess, sys
    with open(__file__, "a") as handle:
        handle.write("# called\\n")
    data = sys.stdin.buffer.read()
    done = subprocess.run(
        [sys.executable, "-m", "lorelab.workers.adapters.static"], input=data, capture_output=True
    )
    sys.stdout.buffer.write(done.stdout)
    """
)


def test_a_reviewer_that_changes_during_its_call_invalidates_the_trial_by_role(tmp_path):
    script = tmp_path / "reviewer.py"
    script.write_text(CHANGING_REVIEWER)
    out = tmp_path / "out"
    run_learning(_request(agent=FIXTURE, reviewer_agent=(sys.executable, str(script))), out)
    first = json.loads(sorted((out / "trials").iterdir())[0].read_text())
    assert first["status"] == "invalid"
    assert first["reason"] == "a worker identity changed during a call"
    assert first["identityChecks"]
    assert all(change.startswith("reviewer: ") for change in first["identityChecks"])
    second = json.loads(sorted((out / "trials").iterdir())[1].read_text())
    # The change is still there before the next trial: no call is made, and it says why.
    assert second["reason"] == "a worker identity changed before the trial; no call was made"
    assert all(change.startswith("reviewer: ") for change in second["identityChecks"])


def test_the_cli_help_names_every_role_option():
    result = CliRunner().invoke(app, ["eval", "learning", "run", "--help"])
    assert result.exit_code == 0
    for flag in ("--architect-agent", "--author-agent", "--reviewer-agent"):
        assert flag in result.output
    assert "static" in result.output


def test_the_cli_hands_roles_to_other_workers(tmp_path):
    out = tmp_path / "out"
    manifest = tmp_path / "manifest.json"
    manifest.write_text(_one_spec().model_dump_json(by_alias=True))
    result = CliRunner().invoke(
        app,
        [
            "eval",
            "learning",
            "run",
            "--fixtures",
            str(manifest),
            "--repeat",
            "1",
            "--seed",
            "3",
            "--agent",
            "fixture",
            "--architect-agent",
            "static",
            "--reviewer-agent",
            "static",
            "--json",
            "--output",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["roles"]["architect"]["argv"] == resolve_agent("static")
    assert summary["roles"]["author"]["kind"] == "protocol-fixture"
    assert summary["fixtureRoles"] == ["author"]


@pytest.mark.parametrize("flag", ["--architect-agent", "--author-agent", "--reviewer-agent"])
def test_a_bad_role_worker_is_refused_naming_its_option(tmp_path, flag):
    result = CliRunner().invoke(
        app,
        [
            "eval",
            "learning",
            "run",
            "--agent",
            "fixture",
            flag,
            "rm -rf /",
            "--output",
            str(tmp_path / "out"),
        ],
    )
    assert result.exit_code == 2
    assert flag in result.output
    assert "Traceback" not in result.output
    assert not Path(tmp_path / "out").exists()


# --- workers that cannot start -------------------------------------------------------------


def _cli_learning(tmp_path: Path, *args: str) -> tuple[int, str, Path]:
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app, ["eval", "learning", "run", "--dataset", "default", "--output", str(out), *args]
    )
    return result.exit_code, result.stderr, out


def test_an_agent_cli_that_is_not_installed_stops_the_run_before_any_trial_with_exit_2(
    tmp_path, monkeypatch
):
    # The claude adapter binds, but the claude it would launch is nowhere on PATH.
    # The sandbox is probed (once per process) on the real PATH: only the agent CLI is missing.
    probe_sandbox()
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    monkeypatch.delenv("LORELAB_CLAUDE_BIN", raising=False)
    code, stderr, out = _cli_learning(tmp_path, "--agent", "claude")
    assert code == 2
    [line] = stderr.strip().splitlines()
    assert "the architect, author and reviewer worker claude cannot start" in line
    assert "LORELAB_CLAUDE_BIN" in line
    preflight = json.loads((out / "preflight.json").read_text())
    assert preflight["ok"] is False
    assert "cannot find claude on PATH" in preflight["error"]
    assert not (out / "trials").exists()


def test_a_tool_named_by_its_variable_that_does_not_exist_is_named_with_the_variable(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("LORELAB_CLAUDE_BIN", str(tmp_path / "no-claude"))
    outcome = run_learning(_request(agent=tuple(adapter_argv("claude"))), tmp_path / "out")
    assert outcome.exit_code == 2
    assert f"LORELAB_CLAUDE_BIN={tmp_path / 'no-claude'} names no executable" in outcome.message


def _standin_pynguin(tmp_path: Path) -> Path:
    pynguin = tmp_path / "pynguin"
    pynguin.write_text("#!/bin/sh\nexit 0\n")
    pynguin.chmod(0o755)
    return pynguin


def test_pynguin_without_its_consent_variable_stops_the_run_in_preflight_naming_the_fix(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("LORELAB_PYNGUIN", str(_standin_pynguin(tmp_path)))
    monkeypatch.delenv("PYNGUIN_DANGER_AWARE", raising=False)
    code, stderr, out = _cli_learning(
        tmp_path, "--agent", "pynguin", "--architect-agent", "static", "--reviewer-agent", "static"
    )
    assert code == 2
    [line] = stderr.strip().splitlines()
    assert "the author worker pynguin cannot start" in line
    assert "set PYNGUIN_DANGER_AWARE=1" in line
    assert not (out / "trials").exists()


def test_pynguin_is_startable_exactly_when_its_consent_variable_is_set(tmp_path, monkeypatch):
    monkeypatch.setenv("LORELAB_PYNGUIN", str(_standin_pynguin(tmp_path)))
    assignment = RoleAssignment.of(PYNGUIN, architect=STATIC, reviewer=STATIC)
    identities = bind_roles(assignment, cwd=tmp_path, operator_identity=None)
    check_startable(assignment, identities, {"PYNGUIN_DANGER_AWARE": "1"})
    with pytest.raises(WorkerUnavailable, match="author worker pynguin"):
        check_startable(assignment, identities, {})
