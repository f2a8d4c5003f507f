"""The shared options: one spelling, one parameter name and one timeout unit in every command."""

import json

import click
import pytest
from click.testing import CliRunner

from lorelab.cli import eval as eval_module
from lorelab.cli import main as main_module
from lorelab.cli._common import LazyGroup, load_lazy
from lorelab.cli.main import app
from lorelab.workers import SHIPPED_ADAPTERS
from tests.support.workers import architect_payload


def _walk(command: click.Command, path: tuple[str, ...] = ()):
    yield path, command
    if isinstance(command, click.Group):
        ctx = click.Context(command)
        for name in command.list_commands(ctx):
            yield from _walk(command.get_command(ctx, name), (*path, name))


ALL_COMMANDS = list(_walk(app))

# Flags whose parameter name is fixed across every command that has them (memory is excluded:
# its own module keeps its option names).
SHARED_NAMES = {
    "--agent": "agent",
    "--identity": "operator_identity",
    "--json": "as_json",
    "--home": "home",
    "--worker-timeout-s": "worker_timeout_s",
    "--allow-unsandboxed": "allow_unsandboxed",
}


def _options(command: click.Command):
    return [param for param in command.params if isinstance(param, click.Option)]


def test_the_command_tree_is_loaded_completely():
    paths = {" ".join(path) for path, _ in ALL_COMMANDS}
    assert {"tests run", "tests generate", "eval conditions decide", "worker call"} <= paths


@pytest.mark.parametrize("flag", sorted(SHARED_NAMES))
def test_each_shared_flag_is_stored_under_one_name_everywhere(flag):
    seen = {}
    for path, command in ALL_COMMANDS:
        if path[:1] == ("memory",):
            continue
        for option in _options(command):
            if flag in option.opts:
                seen[" ".join(path)] = option.name
    assert seen, f"no command has {flag}"
    assert set(seen.values()) == {SHARED_NAMES[flag]}, seen


def test_identity_is_operator_identity_in_conditions_run_too():
    names = {
        o.name
        for o in _options(
            app.get_command(click.Context(app), "eval")
            .get_command(click.Context(app), "conditions")
            .get_command(click.Context(app), "run")
        )
    }
    assert "operator_identity" in names
    assert "identity" not in names


def test_every_worker_timeout_is_in_seconds_with_the_millisecond_spelling_hidden():
    commands = 0
    for path, command in ALL_COMMANDS:
        if path[:1] == ("memory",):
            continue
        by_flag = {flag: option for option in _options(command) for flag in option.opts}
        if "--timeout-ms" in by_flag:
            commands += 1
            assert by_flag["--timeout-ms"].hidden, path
            assert not by_flag["--worker-timeout-s"].hidden, path
        for flag, option in by_flag.items():
            if "timeout" in flag and not option.hidden:
                assert flag.endswith("-s"), (path, flag)
    assert commands == 4  # worker call, tests generate, eval learning, eval context run


def test_agent_help_lists_the_adapters_from_the_registry():
    result = CliRunner().invoke(app, ["worker", "call", "--help"], terminal_width=400)
    assert result.exit_code == 0
    assert f"({', '.join(SHIPPED_ADAPTERS)})" in " ".join(result.output.split())


def test_help_of_a_command_with_an_adapter_subset_lists_only_registry_names():
    result = CliRunner().invoke(app, ["tests", "generate", "--help"], terminal_width=400)
    help_text = " ".join(result.output.split())
    assert "(fixture, claude, codex, gemini, pynguin)" in help_text
    assert "fixture-host" not in help_text


def _worker_call(tmp_path, *flags):
    payload = tmp_path / "payload.json"
    payload.write_text(json.dumps(architect_payload()))
    return CliRunner().invoke(
        app,
        [
            "worker",
            "call",
            "--agent",
            "fixture",
            "--role",
            "architect",
            "--payload",
            str(payload),
            "--cwd",
            str(tmp_path),
            *flags,
        ],
    )


def test_worker_timeout_in_seconds_reaches_the_receipt_in_milliseconds(tmp_path):
    result = _worker_call(tmp_path, "--worker-timeout-s", "2.5")
    receipt = json.loads(result.stdout)
    assert receipt["timeoutMs"] == 2500


def test_the_old_millisecond_spelling_still_works(tmp_path):
    result = _worker_call(tmp_path, "--timeout-ms", "3000")
    receipt = json.loads(result.stdout)
    assert receipt["timeoutMs"] == 3000
    assert result.stderr.splitlines()[0] == (
        "lorelab: warning: '--timeout-ms' is deprecated; use '--worker-timeout-s'"
    )


def test_giving_both_timeout_spellings_is_a_one_line_usage_error(tmp_path):
    result = _worker_call(tmp_path, "--timeout-ms", "3000", "--worker-timeout-s", "3")
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1
    assert "not both" in lines[0]


def test_an_out_of_range_worker_timeout_in_seconds_is_refused_before_anything_runs(tmp_path):
    output = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        [
            "eval",
            "context",
            "run",
            "--trials",
            "--agent",
            "fixture-context",
            "--output",
            str(output),
            "--worker-timeout-s",
            "121",
            str(tmp_path / "f.json"),
        ],
    )
    assert result.exit_code == 2
    assert "--worker-timeout-s" in result.stderr
    assert not output.exists()


@pytest.mark.parametrize(
    ("group", "table"), [(app, main_module.COMMANDS), (None, eval_module.COMMANDS)]
)
def test_the_lazy_short_help_is_the_command_s_own(group, table):
    for name, entry in table.items():
        command = load_lazy(entry)
        assert command.get_short_help_str(limit=1000) == entry.short_help, name
        assert isinstance(group or eval_module.eval_group, LazyGroup)
