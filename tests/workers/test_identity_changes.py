"""Identity comparison: what a re-check reports as changed, and what it does not."""

import sys
from pathlib import Path

import lorelab
from lorelab.workers import (
    VERIFICATION_SCOPE,
    bind_identity,
    check_identity,
    implementation_hashes,
)
from tests.support.workers import sha256_of, write_script


def test_an_unchanged_identity_checks_ok(trial):
    write_script(trial / "worker.py", "print('{}')\n")
    identity = bind_identity([sys.executable, "worker.py"], cwd=trial, operator_identity=None)
    assert check_identity(identity, cwd=trial).ok


def test_a_content_change_is_reported(trial):
    script = trial / "worker.py"
    script.write_text("print('{}')\n")
    identity = bind_identity([sys.executable, "worker.py"], cwd=trial, operator_identity=None)
    script.write_text("print('{} ')\n")
    check = check_identity(identity, cwd=trial)
    assert not check.ok
    assert any("script 'worker.py': content changed" in c for c in check.changes)


def test_a_permission_change_is_reported(trial):
    script = trial / "worker.py"
    script.write_text("print('{}')\n")
    script.chmod(0o644)
    identity = bind_identity([sys.executable, "worker.py"], cwd=trial, operator_identity=None)
    script.chmod(0o600)
    check = check_identity(identity, cwd=trial)
    assert check.changes == ("script 'worker.py': permission bits changed from 0644 to 0600",)


def test_a_retargeted_symlink_is_reported_even_with_identical_content(trial, tmp_path):
    one = write_script(tmp_path / "a" / "real-worker", "print('{}')\n")
    two = write_script(tmp_path / "b" / "real-worker", "print('{}')\n")
    link = trial / "worker"
    link.symlink_to(one)
    identity = bind_identity(["./worker"], cwd=trial, operator_identity=None)
    link.unlink()
    link.symlink_to(two)
    check = check_identity(identity, cwd=trial)
    assert not check.ok
    assert any("resolved target changed" in c for c in check.changes)
    assert not any("content changed" in c for c in check.changes)


def test_a_removed_script_is_reported(trial):
    script = trial / "worker.py"
    script.write_text("print('{}')\n")
    identity = bind_identity([sys.executable, "worker.py"], cwd=trial, operator_identity=None)
    script.unlink()
    check = check_identity(identity, cwd=trial)
    assert not check.ok
    assert "cannot bind the worker again" in check.changes[0]


def test_an_identity_checks_ok_in_another_trial_cwd_with_the_samebound_files(tmp_path):
    first, second = tmp_path / "t1", tmp_path / "t2"
    for cwd in (first, second):
        cwd.mkdir()
        (cwd / "worker.py").write_text("print('{}')\n")
    identity = bind_identity([sys.executable, "worker.py"], cwd=first, operator_identity=None)
    assert check_identity(identity, cwd=second).ok
    (second / "worker.py").write_text("print('changed')\n")
    assert not check_identity(identity, cwd=second).ok


def test_implementation_hashes_cover_every_module_and_shipped_adapter():
    hashes = implementation_hashes()
    root = Path(lorelab.__file__).parent
    modules = {
        "lorelab/" + p.relative_to(root).as_posix()
        for p in root.rglob("*.py")
        if "__pycache__" not in p.parts
    }
    data = {
        "lorelab/" + p.relative_to(root).as_posix()
        for p in (root / "testing").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    assert set(hashes) == modules | data
    # The fixture host answers the board set from this file: it is bound like its code.
    board = root / "testing" / "fixture_board.json"
    assert hashes["lorelab/testing/fixture_board.json"] == sha256_of(board)
    for adapter in ("claude", "codex", "gemini", "pynguin"):
        key = f"lorelab/workers/adapters/{adapter}.py"
        assert hashes[key] == sha256_of(root / "workers" / "adapters" / f"{adapter}.py")


def test_the_verification_scope_never_claims_full_attestation(trial):
    assert VERIFICATION_SCOPE["fullRuntimeAttestation"] is False
    identity = bind_identity([sys.executable, "-c", "pass"], cwd=trial, operator_identity=None)
    dumped = identity.model_dump(mode="json", by_alias=True)
    assert dumped["verificationScope"]["fullRuntimeAttestation"] is False
    assert dumped["model"] == {"requested": None, "verified": None}


def test_a_changed_shell_script_is_reported(trial):
    script = trial / "run.sh"
    script.write_text("echo '{}'\n")
    identity = bind_identity(["bash", "run.sh"], cwd=trial, operator_identity=None)
    with script.open("a") as handle:
        handle.write("# appended\n")
    check = check_identity(identity, cwd=trial)
    assert not check.ok
    assert any("script 'run.sh': content changed" in change for change in check.changes)


def test_an_operand_file_created_after_binding_is_not_a_change(trial):
    (trial / "w.py").write_text("print('{}')\n")
    identity = bind_identity(
        ["bash", "-c", "true", "sh", "out.txt"], cwd=trial, operator_identity=None
    )
    (trial / "out.txt").write_text("written by the worker\n")
    assert check_identity(identity, cwd=trial).ok


def test_an_existing_operand_file_that_changes_is_a_change(trial):
    (trial / "data.txt").write_text("x\n")
    identity = bind_identity(["cat", "data.txt"], cwd=trial, operator_identity=None)
    (trial / "data.txt").write_text("y\n")
    check = check_identity(identity, cwd=trial)
    assert any("operand 'data.txt': content changed" in change for change in check.changes)
