"""Reading the argv of shells and other interpreters: which operand is the script."""

import pytest

from lorelab.errors import PreflightError, UsageError
from lorelab.workers.identity._grammar import interpreter_family, plan_arguments, shell_words


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("sh", "shell"),
        ("bash", "shell"),
        ("zsh", "shell"),
        ("dash", "shell"),
        ("ksh", "shell"),
        ("ruby", "ruby"),
        ("ruby3.2", "ruby"),
        ("perl", "perl"),
        ("perl5.36.0", "perl"),
        ("php8.2", "php"),
        ("lua5.4", "lua"),
        ("Rscript", "rscript"),
        ("tclsh8.6", "tcl"),
        ("deno", "deno"),
        ("bun", "bun"),
        ("ssh", None),
        ("java", None),
        ("python3", None),
    ],
)
def test_interpreters_are_recognised_by_name(name, family):
    assert interpreter_family([name]) == family


@pytest.mark.parametrize(
    ("argv", "script", "start"),
    [
        (["bash", "run.sh", "a"], "run.sh", 2),
        (["bash", "-euo", "pipefail", "run.sh"], "run.sh", 4),
        (["bash", "--norc", "--rcfile", "rc", "-x", "run.sh"], "run.sh", 6),
        (["sh", "+o", "noglob", "--", "-odd.sh"], "-odd.sh", 5),
        (["ruby", "-w", "-I", "lib", "-rjson", "worker.rb", "--model", "m"], "worker.rb", 6),
        (["perl", "-Mstrict", "-l", "-I", "lib", "worker.pl"], "worker.pl", 6),
        (["php", "-d", "memory_limit=1G", "worker.php"], "worker.php", 4),
        (["php", "-f", "worker.php", "--", "x"], "worker.php", 4),
        (["lua", "-l", "socket", "worker.lua"], "worker.lua", 4),
        (["tclsh", "-encoding", "utf-8", "worker.tcl"], "worker.tcl", 4),
        (["deno", "run", "--allow-read", "-c", "deno.json", "worker.ts", "x"], "worker.ts", 6),
        (["deno", "worker.ts"], "worker.ts", 2),
        (["bun", "run", "--smol", "worker.ts"], "worker.ts", 4),
        (["bun", "-r", "./pre.ts", "worker.ts"], "worker.ts", 4),
    ],
)
def test_the_first_non_option_operand_is_the_script(argv, script, start):
    plan = plan_arguments(interpreter_family([argv[0]]) or "", argv)
    assert plan.script == script
    assert plan.script_index is not None
    assert argv[plan.script_index] == script
    assert plan.program_start == start
    assert plan.inline == ()


@pytest.mark.parametrize(
    ("argv", "flag", "text", "start"),
    [
        (["sh", "-c", "python3 w.py", "name", "arg"], "-c", "python3 w.py", 3),
        (["bash", "-ec", "make test"], "-c", "make test", 3),
        (["bash", "-c", "-x", "echo hi"], "-c", "echo hi", 4),
        (["ruby", "-e", "puts 1", "arg"], "-e", "puts 1", 3),
        (["perl", "-lne", "print if /x/"], "-e", "print if /x/", 3),
        (["perl", "-eprint 1"], "-e", "print 1", 2),
        (["php", "-r", "echo 1;"], "-r", "echo 1;", 3),
        (["Rscript", "--vanilla", "-e", "cat(1)"], "-e", "cat(1)", 4),
        (["deno", "eval", "console.log(1)"], "eval", "console.log(1)", 3),
        (["bun", "-e", "console.log(1)"], "-e", "console.log(1)", 3),
        (["bun", "--print=1+1"], "--print", "1+1", 2),
    ],
)
def test_inline_program_text_is_found(argv, flag, text, start):
    plan = plan_arguments(interpreter_family([argv[0]]) or "", argv)
    assert [(entry.flag, entry.text) for entry in plan.inline] == [(flag, text)]
    assert plan.script is None
    assert plan.program_start == start
    assert plan.inline[0].shell == (argv[0] in ("sh", "bash"))


@pytest.mark.parametrize(
    "argv",
    [
        ["bash"],
        ["bash", "-s"],
        ["sh", "-x", "-"],
        ["ruby"],
        ["ruby", "-"],
        ["perl", "-w"],
        ["php"],
        ["lua", "-"],
        ["deno"],
    ],
)
def test_an_interpreter_reading_its_program_from_stdin_is_refused(argv):
    with pytest.raises(PreflightError, match="stdin"):
        plan_arguments(interpreter_family([argv[0]]) or "", argv)


@pytest.mark.parametrize(
    "argv",
    [["ruby", "-C", "elsewhere", "w.rb"], ["bun", "--cwd", "elsewhere", "w.ts"]],
)
def test_changing_directory_before_the_script_is_refused(argv):
    with pytest.raises(PreflightError, match="changes directory"):
        plan_arguments(interpreter_family([argv[0]]) or "", argv)


@pytest.mark.parametrize(
    "argv",
    [
        ["deno", "run", "https://example.com/worker.ts"],
        ["deno", "npm:cowsay"],
        ["bun", "run", "https://example.com/worker.ts"],
    ],
)
def test_a_remote_script_is_refused(argv):
    with pytest.raises(PreflightError, match="not a local file"):
        plan_arguments(interpreter_family([argv[0]]) or "", argv)


@pytest.mark.parametrize(
    "argv", [["bash", "-c"], ["bash", "-o"], ["ruby", "-e"], ["php", "-f"], ["deno", "eval"]]
)
def test_a_flag_missing_its_argument_is_a_usage_error(argv):
    with pytest.raises(UsageError, match="needs an argument"):
        plan_arguments(interpreter_family([argv[0]]) or "", argv)


def test_ruby_dash_s_looks_the_script_up_on_path():
    plan = plan_arguments("ruby", ["ruby", "-S", "rake", "test"])
    assert plan.script == "rake"
    assert plan.script_on_path


def test_a_bun_package_script_name_is_not_required_to_be_a_file():
    assert plan_arguments("bun", ["bun", "run", "dev"]).script_optional
    assert not plan_arguments("bun", ["bun", "run", "worker.ts"]).script_optional
    assert not plan_arguments("bun", ["bun", "src/worker"]).script_optional


def test_subcommands_that_run_no_script_bind_none():
    assert plan_arguments("deno", ["deno", "test", "-A"]).script is None
    assert plan_arguments("bun", ["bun", "test", "a.test.ts"]).script is None


def test_shell_words_mark_where_commands_stand():
    words = shell_words("FOO=1 python3 'my w.py' 2>/dev/null | tee out.log; then ./run.sh")
    assert words == [
        ("FOO=1", False),
        ("python3", True),
        ("my w.py", False),
        ("2", False),
        ("/dev/null", False),
        ("tee", True),
        ("out.log", False),
        ("./run.sh", True),
    ]


def test_shell_words_of_unbalanced_text_split_at_whitespace():
    assert shell_words("echo 'open") == [("echo", True), ("'open", False)]
