"""One operations table builds both `lorelab memory` and `lorelab mcp`; the surface is pinned."""

import ast
import json
import subprocess
import sys
import types
from pathlib import Path

import anyio
import click
from click.testing import CliRunner

import lorelab.memory
from lorelab.cli._memory_commands import Where
from lorelab.cli.main import app
from lorelab.cli.memory import MOVED, _command, memory_group
from lorelab.mcp import _server
from lorelab.memory import OPERATIONS, Operation, RecoverRequest, RecoverResult, SqliteMemoryStore


def _cli_command(name: str) -> click.Command | None:
    group: click.Command | None = memory_group
    for word in name.split(" "):
        assert isinstance(group, click.Group)
        group = group.commands.get(word)
    return group


def test_every_operation_is_a_cli_command_and_every_tool_an_operation(tmp_path):
    for entry in OPERATIONS:
        assert _cli_command(entry.name) is not None, entry.name
    with SqliteMemoryStore(tmp_path / "memory.db") as store:
        server = _server.build_server(store, tmp_path, tmp_path, allow_checks=True)
        listed = anyio.run(server.list_tools)
    assert [tool.name for tool in listed] == [e.tool for e in OPERATIONS if e.tool is not None]
    for tool, entry in zip(listed, [e for e in OPERATIONS if e.tool is not None], strict=True):
        assert tool.input_schema == entry.request.model_json_schema()
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is entry.read_only


def test_an_operation_added_to_the_table_is_served_by_both_without_more_code(tmp_path, monkeypatch):
    def echo(target: object, request: RecoverRequest) -> RecoverResult:
        return RecoverResult(found=False, checkpoint=None, handoff_brief=request.scope)

    entry = Operation("echo", "lore_echo", RecoverRequest, RecoverResult, True, "Echo.", echo)
    runner = CliRunner()
    group = click.Group("memory-test", commands=[_command(entry, "echo")])
    result = runner.invoke(
        group,
        ["echo", "--input", "-", "--json"],
        input='{"scope": "s-1"}',
        obj=Where(None, str(tmp_path)),
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["handoff_brief"] == "s-1"

    monkeypatch.setattr(_server, "OPERATIONS", (*OPERATIONS, entry))
    with SqliteMemoryStore(tmp_path / "memory.db") as store:
        server = _server.build_server(store, tmp_path, tmp_path)
        assert "lore_echo" in [tool.name for tool in anyio.run(server.list_tools)]
        called = server.call(server.operations["lore_echo"], {"scope": "s-2"})
    assert called.structured_content == {"found": False, "checkpoint": None, "handoff_brief": "s-2"}


def test_the_memory_cli_does_not_import_the_mcp_sdk_scipy_or_the_evaluations():
    code = (
        "import sys, lorelab.cli.memory\n"
        "heavy = ('mcp', 'mcp_types', 'scipy', 'numpy', 'ray')\n"
        "print([m for m in sys.modules if m.split('.')[0] in heavy "
        "or m.startswith('lorelab.evaluation')])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_the_memory_package_exports_exactly_its_public_names():
    # Public names are loaded on first use: dir() lists them, and each one resolves.
    public = {
        name
        for name in dir(lorelab.memory)
        if not name.startswith("_")
        and name != "annotations"
        and not isinstance(getattr(lorelab.memory, name), types.ModuleType)
    }
    assert set(lorelab.memory.__all__) == public
    assert sorted(lorelab.memory.__all__) == sorted(set(lorelab.memory.__all__))


def test_what_type_checkers_see_of_the_memory_package_is_what_it_loads():
    # The package's typing-only imports re-export exactly the names of its lazy-loading table.
    tree = ast.parse(Path(lorelab.memory.__file__).read_text(encoding="utf-8"))
    block = next(node for node in tree.body if isinstance(node, ast.If))
    static = {
        alias.name: node.module
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        if alias.asname == alias.name
    }
    assert len(static) == sum(1 for node in block.body for alias in node.names)
    assert static == lorelab.memory._WHERE


def test_the_memory_group_help_lists_every_top_level_operation():
    result = CliRunner().invoke(app, ["memory", "--help"])
    assert result.exit_code == 0
    # An operation moved under a group (memory skills promote, memory candidates check) is
    # listed by its group; its old flat name stays a hidden alias.
    for entry in OPERATIONS:
        assert MOVED.get(entry.name, entry.name).split(" ")[0] in result.output
