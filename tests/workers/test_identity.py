import hashlib
import os
import shutil
import sys
from pathlib import Path

import pytest

import lorelab
from lorelab.errors import InputFileError, PreflightError
from lorelab.workers import (
    bind_identity,
)
from tests.support.missing_tools import NO_NODE
from tests.support.workers import bound_files, sha256_of, write_script


def test_python_dash_c_source_is_bound_by_its_hash(trial):
    code = "import sys; print(sys.stdin.read())"
    identity = bind_identity([sys.executable, "-u", "-c", code], cwd=trial, operator_identity=None)
    assert identity.launcher.kind == "python"
    assert identity.launcher.sha256 == sha256_of(Path(sys.executable))
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
    files = bound_files(identity)
    assert files["module", "mypkg.worker"].sha256 == sha256_of(package / "worker.py")
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
    assert bound_files(identity)["module", "tool.__main__"].sha256 == sha256_of(
        package / "__main__.py"
    )


def test_a_shipped_adapter_module_binds_the_installed_file(trial):
    identity = bind_identity(
        [sys.executable, "-m", "lorelab.workers.adapters.claude"], cwd=trial, operator_identity=None
    )
    bound = bound_files(identity)["module", "lorelab.workers.adapters.claude"]
    installed = Path(lorelab.__file__).parent / "workers" / "adapters" / "claude.py"
    assert bound.path == str(installed)
    assert bound.sha256 == sha256_of(installed)


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
    bound = bound_files(identity)["script", "worker.py"]
    assert bound.path == str(script)
    assert bound.sha256 == sha256_of(script)
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
    bound = bound_files(identity)["script", "app/__main__.py"]
    assert bound.sha256 == sha256_of(app / "__main__.py")
    assert bound.cwd_relative is True


@pytest.mark.skipif(shutil.which("node") is None, reason=NO_NODE)
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
    assert identity.launcher.sha256 == sha256_of(launcher)


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
    files = bound_files(identity)
    assert identity.launcher.kind == "script"
    assert files["interpreter", "/usr/bin/env"].sha256 == sha256_of(Path("/usr/bin/env"))
    python3 = shutil.which("python3")
    assert python3 is not None
    assert files["interpreter", "python3"].path == python3


def test_a_script_with_a_direct_shebang_binds_its_interpreter(trial):
    launcher = trial / "worker.sh"
    launcher.write_text("#!/bin/sh\necho '{}'\n")
    launcher.chmod(0o755)
    identity = bind_identity(["./worker.sh"], cwd=trial, operator_identity=None)
    assert bound_files(identity)["interpreter", "/bin/sh"].sha256 == sha256_of(Path("/bin/sh"))


def test_an_env_launcher_binds_the_program_it_runs(trial):
    script = trial / "w.py"
    script.write_text("print('{}')\n")
    identity = bind_identity(
        ["/usr/bin/env", "FOO=1", "python3", "w.py"], cwd=trial, operator_identity=None
    )
    files = bound_files(identity)
    assert files["interpreter", "python3"].path == shutil.which("python3")
    assert files["script", "w.py"].sha256 == sha256_of(script)


@pytest.mark.skipif(shutil.which("node") is None, reason=NO_NODE)
def test_node_inline_source_is_bound(trial):
    identity = bind_identity(["node", "-e", "console.log('{}')"], cwd=trial, operator_identity=None)
    assert identity.launcher.kind == "node"
    assert identity.inline_sources[0].flag == "-e"
    assert identity.inline_sources[0].sha256 == hashlib.sha256(b"console.log('{}')").hexdigest()


@pytest.mark.skipif(shutil.which("node") is None, reason=NO_NODE)
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
    files = bound_files(identity)
    assert files["preload", "./pre.js"].sha256 == sha256_of(trial / "pre.js")
    assert files["preload", "hook"].path == str(dependency / "lib" / "hook.js")
    assert files["entrypoint", "main.js"].sha256 == sha256_of(trial / "main.js")


@pytest.mark.skipif(shutil.which("node") is None, reason=NO_NODE)
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
    assert operands[0].sha256 == sha256_of(data)


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
