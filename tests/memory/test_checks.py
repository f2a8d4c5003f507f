import sys
from pathlib import Path

from lorelab.memory import SkillStep
from lorelab.memory._checks import run_check, run_checks

PY = sys.executable


def _step(code: str, expected: int = 0) -> SkillStep:
    return SkillStep(command=f"{PY} -c '{code}'", expected_exit_code=expected)


def test_a_check_passes_when_it_returns_its_expected_exit_code(tmp_path):
    result = run_check(_step("import sys; sys.exit(3)", expected=3), tmp_path, 30)
    assert result.status == "passed"
    assert result.exit_code == 3
    assert result.duration_ms is not None


def test_a_check_with_another_exit_code_fails_and_keeps_its_output_tail(tmp_path):
    result = run_check(_step('print("boom"); raise SystemExit(1)'), tmp_path, 30)
    assert result.status == "failed"
    assert result.exit_code == 1
    assert "boom" in result.output_tail


def test_a_check_past_its_timeout_is_killed_and_recorded_as_timed_out(tmp_path):
    result = run_check(_step("import time; time.sleep(60)"), tmp_path, 0.5)
    assert result.status == "timed_out"
    assert result.exit_code is None
    assert "timed out after 0.5 s" in (result.error or "")


def test_a_missing_program_or_unsplittable_command_is_an_error_not_a_crash(tmp_path):
    missing = run_check(SkillStep(command="no-such-program-lorelab --x"), tmp_path, 5)
    assert missing.status == "error"
    assert "no-such-program-lorelab" in (missing.error or "")
    broken = run_check(SkillStep(command="echo 'unterminated"), tmp_path, 5)
    assert broken.status == "error"


def test_checks_run_without_a_shell(tmp_path):
    result = run_check(SkillStep(command="echo $HOME && exit 3"), tmp_path, 5)
    assert result.status == "passed"
    assert "$HOME && exit 3" in result.output_tail


def test_secrets_in_check_output_are_redacted(tmp_path):
    token = "gh" + "p_" + "a" * 36
    result = run_check(_step(f'print("{token}")'), tmp_path, 30)
    assert token not in result.output_tail
    assert "[REDACTED:github_token]" in result.output_tail


def test_checks_run_in_a_copy_and_stop_at_the_first_failure(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "data.txt").write_text("original")
    outcome = run_checks(
        [
            _step('open("data.txt", "w").write("changed")'),
            _step('assert open("data.txt").read() == "changed"'),
            _step("raise SystemExit(2)"),
            _step("pass"),
        ],
        project,
        30,
    )
    assert outcome.passed is False
    assert [r.status for r in outcome.results] == ["passed", "passed", "failed", "not_run"]
    assert (project / "data.txt").read_text() == "original"
    assert sorted(p.name for p in Path(project).iterdir()) == ["data.txt"]


def test_a_dream_check_cannot_write_outside_its_copy_and_records_its_confinement(tmp_path):
    from lorelab.io import probe_sandbox

    support = probe_sandbox()
    copy = tmp_path / "copy"
    copy.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    code = f"import os\ntry:\n    os.remove({str(victim)!r})\nexcept OSError:\n    pass\n"
    (copy / "hostile.py").write_text(code)
    result = run_check(SkillStep(command=f"{PY} hostile.py"), copy, 30)
    assert result.status == "passed"
    # What the receipt says is what this machine gave, never more.
    assert result.sandbox == support.kind
    if support.kind == "bubblewrap":
        assert victim.read_text() == "keep me\n"
    else:
        assert not victim.exists()
