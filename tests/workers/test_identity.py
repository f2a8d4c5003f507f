import hashlib
import os
import re
import shutil
import sys
from pathlib import Path

import pytest

import lorelab
from lorelab.errors import InputFileError, PreflightError, UsageError
from lorelab.workers import (
    VERIFICATION_SCOPE,
    adapter_argv,
    bind_identity,
    check_identity,
    implementation_hashes,
)
from lorelab.workers.identity import _files as identity_files
from tests.support.workers import write_script


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _files(identity):
    return {(f.kind, f.declared): f for f in identity.bound_files}


def test_python_dash_c_source_is_bound_by_its_hash(trial):
    code = "import sys; print(sys.stdin.read())"
    identity = bind_identity([sys.executable, "-u", "-c", code], cwd=trial, operator_identity=None)
    assert identity.launcher.kind == "python"
    assert identity.launcher.sha256 == _sha(Path(sys.executable))
    [inline] = identity.inline_sources
    assert inline.flag == "-c"
    assert inline.sha256 == hashlib.sha256(code.encode()).hexdigest()
    assert inline.bytes == len(code.encode())


def test_combined_python_flags_find_the_inline_source(trial):
    identity = bind_identity([sys.executable, "-Bc", "pass"], cwd=trial, operator_identity=None)
    assert [s.sha256 for s in identity.inline_sources] == [hashlib.sha256(b"pass").hexdigest()]


def test_python_dash_m_binds_the_module_file_and_its_parent_packages(trial):
    package = trial / "mypkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "worker.py").write_text("print('{}')\n")
    identity = bind_identity(
        [sys.executable, "-m", "mypkg.worker", "--model", "m-1"], cwd=trial, operator_identity="op"
    )
    files = _files(identity)
    assert files["module", "mypkg.worker"].sha256 == _sha(package / "worker.py")
    assert files["module", "mypkg.worker"].cwd_relative is True
    assert files["module", "mypkg"].path == str(package / "__init__.py")
    assert identity.model.requested == "m-1"
    assert identity.model.verified is None
    assert identity.operator_identity == "op"


def test_python_dash_m_of_a_package_binds_its_main_module(trial):
    package = trial / "tool"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "__main__.py").write_text("print('{}')\n")
    identity = bind_identity([sys.executable, "-m", "tool"], cwd=trial, operator_identity=None)
    assert _files(identity)["module", "tool.__main__"].sha256 == _sha(package / "__main__.py")


def test_a_shipped_adapter_module_binds_the_installed_file(trial):
    identity = bind_identity(
        [sys.executable, "-m", "lorelab.workers.adapters.claude"], cwd=trial, operator_identity=None
    )
    bound = _files(identity)["module", "lorelab.workers.adapters.claude"]
    installed = Path(lorelab.__file__).parent / "workers" / "adapters" / "claude.py"
    assert bound.path == str(installed)
    assert bound.sha256 == _sha(installed)


def test_an_unknown_module_fails_preflight(trial):
    with pytest.raises(PreflightError, match="no_such_module_here"):
        bind_identity(
            [sys.executable, "-m", "no_such_module_here"], cwd=trial, operator_identity=None
        )


def test_dash_m_is_the_module_flag_for_python_and_not_a_model_request(trial):
    identity = bind_identity([sys.executable, "-m", "json.tool"], cwd=trial, operator_identity=None)
    assert identity.model.requested is None


def test_a_python_script_operand_is_bound(trial):
    script = trial / "worker.py"
    script.write_text("print('{}')\n")
    identity = bind_identity(
        [sys.executable, "worker.py", "-m", "gpt-x"], cwd=trial, operator_identity=None
    )
    bound = _files(identity)["script", "worker.py"]
    assert bound.path == str(script)
    assert bound.sha256 == _sha(script)
    assert bound.mode == f"{script.stat().st_mode & 0o7777:04o}"
    assert identity.model.requested == "gpt-x"


def test_a_relative_script_absent_from_the_trial_cwd_fails_preflight(trial, tmp_path, monkeypatch):
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / "worker.py").write_text("print('{}')\n")
    monkeypatch.chdir(checkout)
    with pytest.raises(PreflightError, match="absent in the trial cwd"):
        bind_identity([sys.executable, "worker.py"], cwd=trial, operator_identity=None)


@pytest.mark.parametrize(
    ("make", "what"),
    [
        (lambda path: path.mkdir(), "is a directory"),
        (lambda path: os.mkfifo(path), "is a FIFO"),
        (lambda path: path.symlink_to(path.parent / "gone.py"), "is a broken symbolic link"),
    ],
)
def test_a_python_script_that_is_not_a_regular_file_says_what_it_is(trial, make, what):
    make(trial / "worker.py")
    with pytest.raises(PreflightError, match=what) as caught:
        bind_identity([sys.executable, "worker.py"], cwd=trial, operator_identity=None)
    assert "absent" not in str(caught.value)


def test_a_python_directory_operand_binds_its_main_module(trial):
    app = trial / "app"
    app.mkdir()
    (app / "__main__.py").write_text("print('{}')\n")
    identity = bind_identity([sys.executable, "app"], cwd=trial, operator_identity=None)
    bound = _files(identity)["script", "app/__main__.py"]
    assert bound.sha256 == _sha(app / "__main__.py")
    assert bound.cwd_relative is True


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_a_node_entrypoint_that_is_a_fifo_says_what_it_is(trial):
    os.mkfifo(trial / "worker.js")
    with pytest.raises(PreflightError, match="is a FIFO"):
        bind_identity(["node", "worker.js"], cwd=trial, operator_identity=None)


def test_python_reading_its_program_from_stdin_is_refused(trial):
    with pytest.raises(PreflightError, match="stdin"):
        bind_identity([sys.executable, "-u"], cwd=trial, operator_identity=None)
    with pytest.raises(PreflightError, match="stdin"):
        bind_identity([sys.executable, "-"], cwd=trial, operator_identity=None)


def test_a_relative_launcher_is_resolved_against_the_trial_cwd(trial, tmp_path, monkeypatch):
    launcher = write_script(trial / "bin" / "worker", "print('{}')\n")
    other = tmp_path / "other"
    write_script(other / "bin" / "worker", "print('other')\n")
    monkeypatch.chdir(other)
    identity = bind_identity(["bin/worker"], cwd=trial, operator_identity=None)
    assert identity.launcher.via == "cwd"
    assert identity.launcher.path == str(launcher)
    assert identity.launcher.cwd_relative is True
    assert identity.launcher.sha256 == _sha(launcher)


def test_a_relative_path_entry_is_resolved_against_the_trial_cwd(trial):
    launcher = write_script(trial / "tools" / "myworker", "print('{}')\n")
    env = {"PATH": f"tools{os.pathsep}/usr/bin"}
    identity = bind_identity(["myworker"], cwd=trial, operator_identity=None, env=env)
    assert identity.launcher.via == "path-lookup"
    assert identity.launcher.path == str(launcher)
    assert identity.launcher.cwd_relative is True
    assert identity.search_path == ["tools", "/usr/bin"]


def test_an_unresolvable_launcher_is_an_input_error(trial):
    with pytest.raises(InputFileError, match="not found on PATH"):
        bind_identity(["no-such-worker-xyz"], cwd=trial, operator_identity=None)
    with pytest.raises(InputFileError, match="not an executable file"):
        bind_identity(["./missing"], cwd=trial, operator_identity=None)


def test_a_script_with_an_env_shebang_binds_its_interpreter(trial):
    launcher = trial / "worker"
    launcher.write_text("#!/usr/bin/env python3\nprint('{}')\n")
    launcher.chmod(0o755)
    identity = bind_identity(["./worker"], cwd=trial, operator_identity=None)
    files = _files(identity)
    assert identity.launcher.kind == "script"
    assert files["interpreter", "/usr/bin/env"].sha256 == _sha(Path("/usr/bin/env"))
    python3 = shutil.which("python3")
    assert python3 is not None
    assert files["interpreter", "python3"].path == python3


def test_a_script_with_a_direct_shebang_binds_its_interpreter(trial):
    launcher = trial / "worker.sh"
    launcher.write_text("#!/bin/sh\necho '{}'\n")
    launcher.chmod(0o755)
    identity = bind_identity(["./worker.sh"], cwd=trial, operator_identity=None)
    assert _files(identity)["interpreter", "/bin/sh"].sha256 == _sha(Path("/bin/sh"))


def test_an_env_launcher_binds_the_program_it_runs(trial):
    script = trial / "w.py"
    script.write_text("print('{}')\n")
    identity = bind_identity(
        ["/usr/bin/env", "FOO=1", "python3", "w.py"], cwd=trial, operator_identity=None
    )
    files = _files(identity)
    assert files["interpreter", "python3"].path == shutil.which("python3")
    assert files["script", "w.py"].sha256 == _sha(script)


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_node_inline_source_is_bound(trial):
    identity = bind_identity(["node", "-e", "console.log('{}')"], cwd=trial, operator_identity=None)
    assert identity.launcher.kind == "node"
    assert identity.inline_sources[0].flag == "-e"
    assert identity.inline_sources[0].sha256 == hashlib.sha256(b"console.log('{}')").hexdigest()


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_node_entrypoint_and_preloads_are_bound(trial):
    (trial / "pre.js").write_text("// preload\n")
    (trial / "main.js").write_text("console.log('{}')\n")
    dependency = trial / "node_modules" / "hook"
    dependency.mkdir(parents=True)
    (dependency / "package.json").write_text('{"main": "lib/hook.js"}')
    (dependency / "lib").mkdir()
    (dependency / "lib" / "hook.js").write_text("// hook\n")
    identity = bind_identity(
        ["node", "--require", "./pre.js", "--import=hook", "main.js"],
        cwd=trial,
        operator_identity=None,
    )
    files = _files(identity)
    assert files["preload", "./pre.js"].sha256 == _sha(trial / "pre.js")
    assert files["preload", "hook"].path == str(dependency / "lib" / "hook.js")
    assert files["entrypoint", "main.js"].sha256 == _sha(trial / "main.js")


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_a_node_entrypoint_absent_from_the_trial_cwd_fails_preflight(trial):
    with pytest.raises(PreflightError, match="absent in the trial cwd"):
        bind_identity(["node", "worker.js"], cwd=trial, operator_identity=None)


def test_existing_absolute_file_operands_are_bound(trial, tmp_path):
    data = tmp_path / "config.json"
    data.write_text("{}")
    identity = bind_identity(
        [sys.executable, "-c", "pass", str(data), f"--config={data}", "/no/such/file"],
        cwd=trial,
        operator_identity=None,
    )
    operands = [f for f in identity.bound_files if f.kind == "operand"]
    assert [f.path for f in operands] == [str(data)]
    assert operands[0].sha256 == _sha(data)


@pytest.mark.parametrize(
    "operand",
    [
        ".env",
        ".env.production",
        "config/.netrc",
        "deploy/server.pem",
        "keys/id_rsa",
        "id_ed25519.pub",
        "api_token.txt",
        "my-credentials.json",
        "vault/secret.yaml",
        "--env-file=.env",
        "~/.ssh/config",
        "~/.aws/credentials",
        "~/.config/gcloud/application_default_credentials.json",
    ],
)
def test_a_credential_like_operand_is_refused_without_being_read(trial, operand, monkeypatch):
    hashed: list[str] = []
    real = identity_files.sha256_file

    def spy(path, *, cap):
        hashed.append(os.fspath(path))
        return real(path, cap=cap)

    monkeypatch.setattr(identity_files, "sha256_file", spy)
    target = trial / operand.split("=")[-1] if not operand.startswith("~") else None
    if target is not None:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("SECRET=1\n")
    with pytest.raises(InputFileError, match="looks like a credential"):
        bind_identity([sys.executable, "-c", "pass", operand], cwd=trial, operator_identity=None)
    assert hashed == [sys.executable] or all(not p.startswith(str(trial)) for p in hashed)
    if target is not None:
        assert str(target) not in hashed


def test_a_credential_like_script_is_refused_before_it_is_hashed(trial, monkeypatch):
    secret = trial / "secret_worker.py"
    secret.write_text("print('{}')\n")
    hashed: list[str] = []
    real = identity_files.sha256_file
    monkeypatch.setattr(
        identity_files,
        "sha256_file",
        lambda path, *, cap: hashed.append(os.fspath(path)) or real(path, cap=cap),
    )
    with pytest.raises(InputFileError, match="contains 'secret'"):
        bind_identity([sys.executable, "secret_worker.py"], cwd=trial, operator_identity=None)
    assert str(secret) not in hashed


@pytest.mark.parametrize(
    "operand",
    [
        "-k~/.aws/credentials",
        "-k~/.aws/config",
        "-xk~/.ssh/known_hosts",
        "-kid_rsa",
        "-k.env",
        "-Kconfig/api_secret.txt",
        "--mount=type=bind,src=~/.ssh",
        "label:~/.config/gcloud/adc.json",
    ],
)
def test_a_credential_attached_to_a_flag_is_refused_without_being_read(
    trial, operand, monkeypatch, tmp_path
):
    home = tmp_path / "home"
    for sub in (".aws", ".ssh", ".config/gcloud"):
        (home / sub).mkdir(parents=True)
    (home / ".aws" / "config").write_text("[default]\n")
    monkeypatch.setenv("HOME", str(home))
    hashed: list[str] = []
    real = identity_files.sha256_file
    monkeypatch.setattr(
        identity_files,
        "sha256_file",
        lambda path, *, cap: hashed.append(os.fspath(path)) or real(path, cap=cap),
    )
    with pytest.raises(InputFileError, match="looks like a credential"):
        bind_identity([sys.executable, "-c", "pass", operand], cwd=trial, operator_identity=None)
    assert all(not path.startswith(str(home)) for path in hashed)


def test_an_absolute_credential_path_attached_to_a_flag_is_refused(trial, monkeypatch, tmp_path):
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    operand = f"-k{home}/.aws/config"
    with pytest.raises(InputFileError, match=r"under ~/\.aws"):
        bind_identity([sys.executable, "w.py", operand], cwd=trial, operator_identity=None)


def test_ordinary_attached_flags_are_not_mistaken_for_credentials(trial):
    (trial / "w.py").write_text("print('{}')\n")
    identity = bind_identity(
        [sys.executable, "-Wignore::DeprecationWarning", "-Xutf8", "w.py", "-v/tmp/out", "-n3"],
        cwd=trial,
        operator_identity=None,
    )
    assert identity.bound_files[0].declared == "w.py"


def test_inline_source_and_free_text_are_not_mistaken_for_credentials(trial):
    identity = bind_identity(
        [
            sys.executable,
            "-c",
            "import os; print(os.environ.get('TOKEN'))",
            "count the token budget",
        ],
        cwd=trial,
        operator_identity=None,
    )
    assert identity.inline_sources


@pytest.mark.parametrize("argv", [[], [""], ["a\x00b"], "python3 worker.py"])
def test_a_malformed_argv_is_a_usage_error(trial, argv):
    with pytest.raises(UsageError):
        bind_identity(argv, cwd=trial, operator_identity=None)


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


def test_an_identity_checks_ok_in_another_trial_cwd_with_the_same_files(tmp_path):
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
    assert set(hashes) == modules
    for adapter in ("claude", "codex", "gemini", "pynguin"):
        key = f"lorelab/workers/adapters/{adapter}.py"
        assert hashes[key] == _sha(root / "workers" / "adapters" / f"{adapter}.py")


def test_the_verification_scope_never_claims_full_attestation(trial):
    assert VERIFICATION_SCOPE["fullRuntimeAttestation"] is False
    identity = bind_identity([sys.executable, "-c", "pass"], cwd=trial, operator_identity=None)
    dumped = identity.model_dump(mode="json", by_alias=True)
    assert dumped["verificationScope"]["fullRuntimeAttestation"] is False
    assert dumped["model"] == {"requested": None, "verified": None}


def test_a_shell_script_operand_is_bound(trial):
    script = trial / "run.sh"
    script.write_text("echo '{}'\n")
    identity = bind_identity(["bash", "-e", "run.sh"], cwd=trial, operator_identity=None)
    bound = _files(identity)["script", "run.sh"]
    assert bound.sha256 == _sha(script)
    assert bound.cwd_relative is True


@pytest.mark.parametrize("shell", ["bash", "sh"])
def test_a_shell_script_absent_from_the_trial_cwd_fails_preflight(
    trial, tmp_path, monkeypatch, shell
):
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / "absent.sh").write_text("echo '{}'\n")
    monkeypatch.chdir(checkout)
    with pytest.raises(PreflightError, match=r"'absent\.sh' is absent in the trial cwd"):
        bind_identity([shell, "absent.sh"], cwd=trial, operator_identity=None)


def test_a_shell_reading_commands_from_stdin_is_refused(trial):
    with pytest.raises(PreflightError, match="stdin"):
        bind_identity(["bash", "-s"], cwd=trial, operator_identity=None)
    with pytest.raises(PreflightError, match="stdin"):
        bind_identity(["sh"], cwd=trial, operator_identity=None)


def test_shell_dash_c_text_is_inline_source_and_binds_what_it_names(trial):
    (trial / "w.py").write_text("print('{}')\n")
    text = "python3 w.py --model m-9"
    identity = bind_identity(["sh", "-c", text], cwd=trial, operator_identity=None)
    [inline] = identity.inline_sources
    assert inline.flag == "-c"
    assert inline.sha256 == hashlib.sha256(text.encode()).hexdigest()
    files = _files(identity)
    assert files["operand", "w.py"].sha256 == _sha(trial / "w.py")
    assert files["command", "python3"].resolved_target == os.path.realpath(
        shutil.which("python3") or ""
    )


def test_a_credential_named_in_shell_text_is_refused_without_being_read(
    trial, monkeypatch, tmp_path
):
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    (home / ".aws" / "config").write_text("[default]\n")
    monkeypatch.setenv("HOME", str(home))
    for text in ("cat ~/.aws/config", "cat $HOME/.aws/config", "python3 w.py < .env"):
        with pytest.raises(InputFileError, match="looks like a credential"):
            bind_identity(["bash", "-c", text], cwd=trial, operator_identity=None)


def test_other_launchers_bind_file_operands_relative_to_the_trial_cwd(trial, tmp_path):
    (trial / "data.txt").write_text("x\n")
    (trial / "sub").mkdir()
    absolute = tmp_path / "abs.txt"
    absolute.write_text("y\n")
    identity = bind_identity(
        ["cat", "data.txt", "sub", "missing.txt", f"--from={absolute}"],
        cwd=trial,
        operator_identity=None,
    )
    files = _files(identity)
    assert files["operand", "data.txt"].cwd_relative is True
    assert files["operand", str(absolute)].cwd_relative is False
    assert {declared for _, declared in files} == {"data.txt", str(absolute)}


def test_python_launchers_still_bind_only_absolute_operands(trial):
    (trial / "w.py").write_text("print('{}')\n")
    (trial / "data.txt").write_text("x\n")
    identity = bind_identity(
        [sys.executable, "w.py", "data.txt"], cwd=trial, operator_identity=None
    )
    assert [(f.kind, f.declared) for f in identity.bound_files] == [("script", "w.py")]


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


def _standin_interpreter(bin_dir: Path, name: str) -> dict[str, str]:
    write_script(bin_dir / name, "import sys\n")
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    return env


@pytest.mark.parametrize(
    ("name", "argv", "script"),
    [
        ("ruby", ["ruby", "-w", "worker.rb"], "worker.rb"),
        ("perl", ["perl", "-Mstrict", "worker.pl"], "worker.pl"),
        ("php", ["php", "-f", "worker.php"], "worker.php"),
        ("deno", ["deno", "run", "-A", "worker.ts"], "worker.ts"),
        ("bun", ["bun", "worker.ts"], "worker.ts"),
        ("zsh", ["zsh", "worker.zsh"], "worker.zsh"),
    ],
)
def test_interpreter_scripts_are_bound_and_must_exist(trial, tmp_path, name, argv, script):
    env = _standin_interpreter(tmp_path / "bin", name)
    with pytest.raises(PreflightError, match=re.escape(f"{name} script '{script}' is absent")):
        bind_identity(argv, cwd=trial, operator_identity=None, env=env)
    (trial / script).write_text("// worker\n")
    identity = bind_identity(argv, cwd=trial, operator_identity=None, env=env)
    assert _files(identity)["script", script].sha256 == _sha(trial / script)
    # The stand-in launcher is itself a script: its shebang interpreter is bound too.
    assert identity.launcher.kind == "script"


def test_an_inline_ruby_program_is_bound_and_not_screened_as_an_operand(trial, tmp_path):
    env = _standin_interpreter(tmp_path / "bin", "ruby")
    code = "puts File.read('token.txt')"
    identity = bind_identity(["ruby", "-e", code], cwd=trial, operator_identity=None, env=env)
    assert identity.inline_sources[0].sha256 == hashlib.sha256(code.encode()).hexdigest()


def test_a_bun_package_script_name_binds_no_script(trial, tmp_path):
    env = _standin_interpreter(tmp_path / "bin", "bun")
    identity = bind_identity(["bun", "run", "dev"], cwd=trial, operator_identity=None, env=env)
    assert all(f.kind != "script" for f in identity.bound_files)


def _adapter(name: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", f"lorelab.workers.adapters.{name}", *extra]


def _path_env(*directories: Path, **variables: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("LORELAB_")}
    env["PATH"] = os.pathsep.join([*map(str, directories), env.get("PATH", "")])
    env.update(variables)
    return env


def test_the_agent_cli_an_adapter_launches_is_bound_from_path(trial, tmp_path):
    claude = write_script(tmp_path / "bin" / "claude", "print('{}')\n")
    identity = bind_identity(
        _adapter("claude"), cwd=trial, operator_identity=None, env=_path_env(tmp_path / "bin")
    )
    assert identity.tool is not None
    assert identity.tool.bound is True
    assert identity.tool.source == "default"
    assert identity.tool.path == str(claude)
    files = _files(identity)
    assert files["tool", "claude"].sha256 == _sha(claude)
    # The stand-in is a script: the interpreter its shebang names is bound as well.
    assert files["interpreter", sys.executable].sha256 == _sha(Path(sys.executable))
    assert not any("claude executable" in item for item in identity.verification_scope["notBound"])


def test_the_adapter_option_wins_over_the_variable_and_path(trial, tmp_path):
    write_script(tmp_path / "bin" / "codex", "print('{}')\n")
    chosen = write_script(trial / "tools" / "codex-dev", "print('{}')\n")
    env = _path_env(tmp_path / "bin", LORELAB_CODEX_BIN=str(tmp_path / "bin" / "codex"))
    identity = bind_identity(
        _adapter("codex", "--bin", "tools/codex-dev"), cwd=trial, operator_identity=None, env=env
    )
    assert identity.tool is not None
    assert (identity.tool.source, identity.tool.declared) == ("option", "tools/codex-dev")
    bound = _files(identity)["tool", "tools/codex-dev"]
    assert bound.path == str(chosen)
    assert bound.cwd_relative is True


def test_the_tool_variable_is_kept_so_later_checks_find_the_same_tool(trial, tmp_path):
    gemini = write_script(tmp_path / "elsewhere" / "gemini-cli", "print('{}')\n")
    env = _path_env(LORELAB_GEMINI_BIN=str(gemini))
    identity = bind_identity(_adapter("gemini"), cwd=trial, operator_identity=None, env=env)
    assert identity.tool is not None
    assert identity.tool.source == "variable"
    # check_identity runs in this process, whose environment has no LORELAB_GEMINI_BIN.
    assert "LORELAB_GEMINI_BIN" not in os.environ
    assert check_identity(identity, cwd=trial).ok
    gemini.write_text(gemini.read_text() + "# changed\n")
    changes = check_identity(identity, cwd=trial).changes
    assert any(f"tool {str(gemini)!r}: content changed" in change for change in changes)


def test_pynguin_is_named_by_its_own_option(trial, tmp_path):
    pynguin = write_script(tmp_path / "venv" / "bin" / "pynguin", "print('{}')\n")
    identity = bind_identity(
        _adapter("pynguin", "--pynguin", str(pynguin), "--seed", "3"),
        cwd=trial,
        operator_identity=None,
        env=_path_env(),
    )
    assert identity.tool is not None
    assert identity.tool.tool == "pynguin"
    assert _files(identity)["tool", str(pynguin)].sha256 == _sha(pynguin)


def test_a_tool_that_cannot_be_found_is_recorded_as_not_bound(trial, tmp_path):
    identity = bind_identity(
        _adapter("claude"), cwd=trial, operator_identity=None, env=_path_env(tmp_path / "empty")
    )
    assert identity.tool is not None
    assert identity.tool.bound is False
    assert identity.tool.path is None
    assert all(f.kind != "tool" for f in identity.bound_files)
    [note] = [item for item in identity.verification_scope["notBound"] if "claude" in item]
    assert "'claude' on PATH" in note
    assert "names no executable file at bind time" in note
    # The shared scope is not modified for other identities.
    assert note not in VERIFICATION_SCOPE["notBound"]


def test_a_tool_that_appears_after_binding_is_a_change(trial, tmp_path):
    env = _path_env(tmp_path / "bin")
    identity = bind_identity(_adapter("claude"), cwd=trial, operator_identity=None, env=env)
    assert identity.tool is not None
    assert identity.tool.bound is False
    write_script(tmp_path / "bin" / "claude", "print('{}')\n")
    changes = check_identity(identity, cwd=trial).changes
    assert "tool 'claude': newly bound" in changes


def test_workers_other_than_the_agent_adapters_bind_no_tool(trial):
    fixture = adapter_argv("fixture")
    assert bind_identity(fixture, cwd=trial, operator_identity=None).tool is None


def test_an_absolute_tool_option_is_bound_once_as_the_tool(trial, tmp_path):
    claude = write_script(tmp_path / "opt" / "claude", "print('{}')\n")
    identity = bind_identity(
        _adapter("claude", f"--bin={claude}"), cwd=trial, operator_identity=None, env=_path_env()
    )
    assert [f.kind for f in identity.bound_files if f.path == str(claude)] == ["tool"]


def test_shell_text_binds_a_named_file_even_where_a_command_stands(trial):
    (trial / "lib.sh").write_text("run() { echo '{}'; }\n")
    (trial / "helper.sh").write_text("echo '{}'\n")  # not executable
    identity = bind_identity(
        ["bash", "-c", "source lib.sh; ./helper.sh"], cwd=trial, operator_identity=None
    )
    files = _files(identity)
    assert files["operand", "lib.sh"].sha256 == _sha(trial / "lib.sh")
    assert files["operand", "./helper.sh"].sha256 == _sha(trial / "helper.sh")


LONG_NAME = "a" * 5000  # longer than any file name the OS accepts (ENAMETOOLONG)


def test_a_script_operand_too_long_to_be_a_file_name_fails_preflight_not_crashes(trial):
    with pytest.raises(PreflightError, match=r"unreadable \(File name too long\)"):
        bind_identity([sys.executable, LONG_NAME], cwd=trial, operator_identity=None)


@pytest.mark.parametrize(
    "tail",
    [
        ["-c", "print(1)", LONG_NAME],
        ["-c", "print(1)", "/" + LONG_NAME],
    ],
)
def test_a_long_text_operand_is_bound_as_text_and_never_crashes_the_binder(trial, tail):
    identity = bind_identity([sys.executable, *tail], cwd=trial, operator_identity=None)
    assert identity.declared_argv[-1] == tail[-1]
    assert [source.flag for source in identity.inline_sources] == ["-c"]


def test_a_trial_cwd_too_long_to_exist_is_a_preflight_error(trial):
    with pytest.raises(PreflightError, match="not a directory"):
        bind_identity([sys.executable, "-c", "1"], cwd=trial / LONG_NAME, operator_identity=None)
