"""What the CLI entry point imports: checked in fresh interpreters through ``sys.modules``."""

import json
import subprocess
import sys

import pytest

HEAVY_PREFIXES = (
    "mcp",
    "scipy",
    "lorelab.evaluation",
    "lorelab.mcp",
    "rich",
    "pydantic",
    # The embedding model and what it needs: loaded only when a vector is computed.
    "numpy",
    "tokenizers",
    "safetensors",
    "wordllama",
)
EMBEDDING = ("numpy", "tokenizers", "safetensors")


def _modules_after(code: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def _heavy(modules: list[str]) -> list[str]:
    return [
        name
        for name in modules
        if any(name == prefix or name.startswith(f"{prefix}.") for prefix in HEAVY_PREFIXES)
    ]


def test_importing_the_cli_entry_point_loads_no_mcp_sdk_scipy_or_evaluation_package():
    modules = _modules_after("import lorelab.cli.main")
    assert "lorelab.cli.main" in modules
    assert _heavy(modules) == []


def test_importing_the_cli_entry_point_loads_no_command_module():
    modules = _modules_after("import lorelab.cli.main")
    commands = [name for name in modules if name.startswith("lorelab.cli.")]
    assert sorted(commands) == ["lorelab.cli._common", "lorelab.cli.main"]


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["eval", "--help"]])
def test_version_and_help_load_no_command_module_or_heavy_package(args):
    code = (
        "import sys\n"
        "from lorelab.cli.main import app\n"
        f"sys.argv = ['lorelab', *{args!r}]\n"
        "try:\n"
        "    app(prog_name='lorelab')\n"
        "except SystemExit:\n"
        "    pass\n"
    )
    modules = _modules_after(code)
    assert _heavy(modules) == []
    loaded = {name for name in modules if name.startswith("lorelab.cli.")}
    assert loaded <= {"lorelab.cli._common", "lorelab.cli.main", "lorelab.cli.eval"}


def test_the_memory_group_is_imported_only_when_memory_is_invoked():
    code = (
        "import sys\n"
        "from lorelab.cli.main import app\n"
        "sys.argv = ['lorelab', 'worker', '--help']\n"
        "try:\n"
        "    app(prog_name='lorelab')\n"
        "except SystemExit:\n"
        "    pass\n"
    )
    modules = _modules_after(code)
    assert "lorelab.cli.worker" in modules
    assert "lorelab.cli.memory" not in modules
    assert "lorelab.cli.eval_conditions" not in modules


def test_eval_context_does_not_load_the_conditions_runner_or_the_mcp_sdk():
    code = (
        "import sys\n"
        "from lorelab.cli.main import app\n"
        "sys.argv = ['lorelab', 'eval', 'context', 'schema']\n"
        "try:\n"
        "    app(prog_name='lorelab')\n"
        "except SystemExit:\n"
        "    pass\n"
    )
    modules = _modules_after(code)
    assert "lorelab.cli.eval_context" in modules
    assert not [m for m in modules if m == "mcp" or m.startswith("mcp.")]
    assert "lorelab.evaluation.conditions" not in modules


def test_a_hook_command_loads_no_mcp_sdk_scipy_or_evaluation_package(tmp_path):
    payload = json.dumps(
        {
            "session_id": "s1",
            "transcript_path": str(tmp_path / "t.jsonl"),
            "cwd": str(tmp_path),
            "hook_event_name": "UserPromptSubmit",
            "prompt": "Fix the parser",
        }
    )
    code = (
        "import io, sys\n"
        "from lorelab.cli.main import app\n"
        f"sys.stdin = io.TextIOWrapper(io.BytesIO({payload.encode()!r}))\n"
        "sys.argv = ['lorelab', 'hook', 'UserPromptSubmit', '--agent', 'claude-code']\n"
        "try:\n"
        "    app(prog_name='lorelab')\n"
        "except SystemExit:\n"
        "    pass\n"
    )
    modules = _modules_after(code)
    assert "lorelab.hooks._handle" in modules
    heavy = [m for m in _heavy(modules) if not m.startswith(("pydantic", "rich"))]
    assert heavy == []


def _memory_command(home: str, *args: str) -> str:
    return (
        "import sys\n"
        "from lorelab.cli.main import app\n"
        f"sys.argv = ['lorelab', 'memory', '--home', {home!r}, *{list(args)!r}]\n"
        "try:\n"
        "    app(prog_name='lorelab')\n"
        "except SystemExit:\n"
        "    pass\n"
    )


def _embedding_modules(modules: list[str]) -> list[str]:
    return [m for m in modules if m.split(".")[0] in EMBEDDING]


def test_the_embedding_model_loads_only_when_a_vector_is_needed(tmp_path):
    home = str(tmp_path / "home")
    # An empty store: prepare has nothing to compare with, so no model.
    empty = _modules_after(_memory_command(home, "prepare", "Fix the date parser test"))
    assert "lorelab.memory._sqlite" in empty
    assert _embedding_modules(empty) == []
    recorded = _modules_after(
        _memory_command(
            home,
            "record",
            "--task",
            "Fix the date parser test",
            "--summary",
            "Made it timezone-aware",
            "--outcome",
            "passed",
            "--verify-command",
            "pytest",
            "--verify-exit-code",
            "0",
        )
    )
    assert {"numpy", "tokenizers", "safetensors"} <= set(recorded)
    listed = _modules_after(_memory_command(home, "list"))
    assert _embedding_modules(listed) == []
    prepared = _modules_after(_memory_command(home, "prepare", "date parser test fails"))
    assert "tokenizers" in prepared
