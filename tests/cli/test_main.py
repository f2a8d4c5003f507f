import json
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

import lorelab
from lorelab.cli._common import LorelabGroup
from lorelab.cli.main import app
from lorelab.errors import (
    ComparisonRefused,
    IdentityChanged,
    InputFileError,
    LorelabError,
    OutcomeFailure,
    PreflightError,
    UsageError,
)


def test_version_prints_the_installed_version():
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert lorelab.__version__ in result.output


def test_help_names_the_exit_codes():
    result = CliRunner().invoke(app, ["--help"])
    assert result.exit_code == 0
    assert "invalid input or usage" in result.output


def _app_raising(exc: BaseException) -> click.Group:
    @click.group(cls=LorelabGroup)
    def group() -> None:
        pass

    @group.command()
    def boom() -> None:
        raise exc

    return group


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (UsageError("bad flag"), 2),
        (InputFileError("m.json: no such file"), 2),
        (OutcomeFailure("a defect escaped"), 1),
        (ComparisonRefused("different fixtures"), 1),
        (PreflightError("launcher missing"), 3),
        (IdentityChanged("script changed"), 3),
    ],
)
def test_errors_map_to_exit_codes_with_one_line_and_no_traceback(exc, code):
    result = CliRunner().invoke(_app_raising(exc), ["boom"])
    assert result.exit_code == code
    assert result.stderr == f"lorelab: error: {exc}\n"
    assert "Traceback" not in result.output


def test_unexpected_exception_is_not_swallowed():
    result = CliRunner().invoke(_app_raising(RuntimeError("bug")), ["boom"])
    assert result.exit_code == 1
    assert isinstance(result.exception, RuntimeError)


def test_every_error_class_declares_an_exit_code_of_1_2_or_3():
    def walk(cls):
        yield cls
        for sub in cls.__subclasses__():
            yield from walk(sub)

    for cls in walk(LorelabError):
        assert cls.exit_code in (1, 2, 3), cls


def test_installed_program_runs_as_a_subprocess():
    done = subprocess.run(
        [sys.executable, "-m", "lorelab", "--version"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0
    assert done.stdout.startswith("lorelab, version")


def test_unknown_command_is_a_usage_error_exit_2():
    result = CliRunner().invoke(app, ["no-such-command"])
    assert result.exit_code == 2


def test_an_unexpected_exception_in_the_program_exits_70_with_its_traceback(monkeypatch, capsys):
    from lorelab.cli import main as main_module

    def broken(**_kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(main_module, "app", broken)
    with pytest.raises(SystemExit) as exited:
        main_module.main()
    assert exited.value.code == 70
    err = capsys.readouterr().err
    assert "Traceback" in err
    assert "RuntimeError: a bug" in err


def test_help_lists_the_signal_and_internal_error_exit_codes():
    result = CliRunner().invoke(app, ["--help"])
    lines = result.output.splitlines()
    for code in ("0", "1", "2", "3", "70", "130", "143"):
        assert any(line.strip().startswith(f"{code} ") for line in lines), code


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["no-such-command"], "No such command 'no-such-command'"),
        (["--no-such-option"], "No such option '--no-such-option'"),
        (["tests", "run"], "Missing argument 'PATH'"),
        (["tests", "run", ".", "--runner", "make"], "'make' is not one of 'pytest', 'node'"),
        (["eval", "conditions", "run", "--bogus"], "No such option '--bogus'"),
        (
            ["worker", "call", "--role", "architect", "--payload", "p.json"],
            "Missing option '--agent'",
        ),
    ],
)
def test_usage_errors_are_one_line_with_exit_2(args, named):
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("lorelab: error: ")
    assert named in lines[0]
    assert "--help" in lines[0]


def test_a_usage_error_from_the_installed_program_is_one_line():
    done = subprocess.run(
        [sys.executable, "-m", "lorelab", "tests", "run", "--bogus"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "lorelab: error: No such option '--bogus'. (see 'lorelab tests run --help')"
    ]


def test_a_group_without_a_subcommand_still_shows_its_help():
    result = CliRunner().invoke(app, ["eval"])
    assert "conditions" in result.output
    assert "learning" in result.output


def test_eval_conditions_decide_is_the_evaluate_command(tmp_path):
    runs = [
        {
            "task_id": task,
            "condition": condition,
            "passed": passed,
            "rework_count": 0,
            "retrieval_relevant": None if condition == "baseline" else True,
            "guidance_tokens": 0 if condition == "baseline" else 100,
            "notes": "",
        }
        for task in ("t1", "t2")
        for condition, passed in (
            ("baseline", False),
            ("memory_guided", True),
            ("skill_planned", True),
            ("dreaming", True),
        )
    ]
    runs_file = tmp_path / "beta2_runs.json"
    runs_file.write_text(json.dumps({"runs": runs}))
    old = CliRunner().invoke(app, ["evaluate", "--input", str(runs_file), "--json"])
    new = CliRunner().invoke(
        app, ["eval", "conditions", "decide", "--input", str(runs_file), "--json"]
    )
    # Two tasks are under the protocol minimums: both spellings decide "insufficient" (exit 1).
    assert old.exit_code == new.exit_code == 1, old.output
    assert json.loads(new.stdout) == json.loads(old.stdout)
    assert json.loads(new.stdout)["conditions"]


def test_a_mistyped_top_level_command_gets_a_suggestion_in_one_line():
    result = CliRunner().invoke(app, ["memroy", "list"])
    assert result.exit_code == 2
    [line] = result.stderr.strip().splitlines()
    assert "No such command 'memroy'. Did you mean 'memory'?" in line


def test_a_mistyped_subcommand_gets_a_suggestion_too():
    result = CliRunner().invoke(app, ["memory", "prepar", "x"])
    assert result.exit_code == 2
    assert "Did you mean 'prepare'?" in result.stderr


def test_dash_capital_v_prints_the_version():
    result = CliRunner().invoke(app, ["-V"])
    assert result.exit_code == 0
    assert result.output.startswith("lorelab, version ")


@pytest.mark.parametrize("group", [[], ["memory"], ["eval"], ["tests"], ["hooks"]])
def test_help_never_cuts_a_command_summary_mid_sentence(group):
    result = CliRunner().invoke(app, [*group, "--help"], terminal_width=80)
    assert result.exit_code == 0
    commands = result.output.split("Commands:", 1)[1]
    assert "..." not in commands


@pytest.mark.parametrize(
    ("args", "suggested"),
    [
        (["hooks", "install", "claud"], "Did you mean 'claude-code'?"),
        (["hooks", "install", "gemni"], "Did you mean 'gemini'?"),
        (["memory", "list", "--kind", "lesons"], "Did you mean 'lesson'?"),
        (["tests", "run", ".", "--runner", "pyest"], "Did you mean 'pytest'?"),
    ],
)
def test_a_mistyped_choice_gets_a_suggestion_in_one_line(args, suggested):
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    [line] = result.stderr.splitlines()
    assert line.startswith("lorelab: error: ")
    assert suggested in line


def test_an_argument_choice_is_named_by_its_metavar_not_its_choices():
    result = CliRunner().invoke(app, ["hooks", "install", "claud"])
    assert "Invalid value for 'AGENT'" in result.stderr
