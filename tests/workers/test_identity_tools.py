"""Identity binding of shell scripts, other interpreters and the agent CLIs an adapter launches."""

import hashlib
import os
import re
import shutil
import sys
from pathlib import Path

import pytest

from lorelab.errors import InputFileError, PreflightError
from lorelab.workers import (
    VERIFICATION_SCOPE,
    adapter_argv,
    bind_identity,
    check_identity,
)
from tests.support.workers import bound_files, sha256_of, write_script


def test_a_shell_script_operand_is_bound(trial):
    script = trial / "run.sh"
    script.write_text("echo '{}'\n")
    identity = bind_identity(["bash", "-e", "run.sh"], cwd=trial, operator_identity=None)
    bound = bound_files(identity)["script", "run.sh"]
    assert bound.sha256 == sha256_of(script)
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
    files = bound_files(identity)
    assert files["operand", "w.py"].sha256 == sha256_of(trial / "w.py")
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
    files = bound_files(identity)
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
    assert bound_files(identity)["script", script].sha256 == sha256_of(trial / script)
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
    files = bound_files(identity)
    assert files["tool", "claude"].sha256 == sha256_of(claude)
    # The stand-in is a script: the interpreter its shebang names is bound as well.
    assert files["interpreter", sys.executable].sha256 == sha256_of(Path(sys.executable))
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
    bound = bound_files(identity)["tool", "tools/codex-dev"]
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
    assert bound_files(identity)["tool", str(pynguin)].sha256 == sha256_of(pynguin)


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
    files = bound_files(identity)
    assert files["operand", "lib.sh"].sha256 == sha256_of(trial / "lib.sh")
    assert files["operand", "./helper.sh"].sha256 == sha256_of(trial / "helper.sh")
