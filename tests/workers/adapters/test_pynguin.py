"""The Pynguin adapter: unit behaviour, a stand-in ``pynguin``, and (slow) real Pynguin 0.48.

The stand-in imitates Pynguin's command line (``--project-path``, ``--module-name``,
``--output-path``, ``--initial-population-data``): it records its argv and the seed module it
was given, and writes ``test_<module>.py`` into the output path, as Pynguin does.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lorelab.workers import adapter_argv, bind_identity, call_worker
from lorelab.workers.adapters.pynguin import keep_first_tests, seed_source
from lorelab.workers.roles import AuthorPayload
from tests.workers.support import (
    architect_payload,
    author_payload,
    lesson,
    reviewer_payload,
    write_script,
)

GENERATED = "import src.clamp\n\n" + "".join(
    "@pytest.mark.xfail(strict=True)\n"
    f"def test_{i}():\n    assert src.clamp.clamp({i}, 0, 3) >= 0\n\n\n"
    for i in range(6)
)

STANDIN = """
import json, os, sys
args = sys.argv[1:]
value = lambda flag: args[args.index(flag) + 1] if flag in args else None
record = {"argv": args, "cwd": os.getcwd(), "seed": None}
data = value("--initial-population-data")
if data:
    record["seed"] = {name: open(os.path.join(data, name)).read() for name in os.listdir(data)}
json.dump(record, open(os.environ["STANDIN_RECORD"], "w"))
module = value("--module-name").rsplit(".", 1)[-1]
with open(os.path.join(value("--output-path"), "test_" + module + ".py"), "w") as handle:
    handle.write(open(os.environ["STANDIN_TESTS"]).read())
"""


def _call(trial, tmp_path, payload, *, danger=True, extra=()):
    pynguin = write_script(tmp_path / "fake" / "pynguin", STANDIN)
    tests = tmp_path / "generated.py"
    tests.write_text(GENERATED)
    record = tmp_path / "record.json"
    env = {
        **os.environ,
        "LORELAB_PYNGUIN": str(pynguin),
        "STANDIN_RECORD": str(record),
        "STANDIN_TESTS": str(tests),
    }
    env.pop("PYNGUIN_DANGER_AWARE", None)
    if danger:
        env["PYNGUIN_DANGER_AWARE"] = "1"
    argv = [*adapter_argv("pynguin"), *extra]
    call = call_worker(argv, payload["role"], payload, cwd=trial, env=env, timeout_ms=60_000)
    return call, json.loads(record.read_text()) if record.exists() else None


def test_pynguin_author_runs_pynguin_on_the_module_and_returns_canonical_test_paths(
    trial, tmp_path
):
    call, seen = _call(trial, tmp_path, author_payload())
    assert call.ok, call.receipt.failure_detail
    args = seen["argv"]
    assert args[args.index("--module-name") + 1] == "src.clamp"
    project = Path(args[args.index("--project-path") + 1])
    assert project.name == "project"
    assert "--initial_population_seeding" not in args
    assert args[args.index("--seed") + 1] == "20240601"
    assert Path(seen["cwd"]) != trial
    assert call.response is not None
    [generated] = call.response["files"]
    assert generated["path"] == "tests/test_clamp.py"
    assert call.receipt.usage is None


def test_pynguin_output_is_trimmed_to_max_cases_whole_tests_at_a_time(trial, tmp_path):
    call, _ = _call(trial, tmp_path, author_payload())
    assert call.response is not None
    content = call.response["files"][0]["content"]
    assert content.count("def test_") == 5
    assert "def test_5" not in content
    assert content.count("@pytest.mark.xfail") == 5
    assert "dropped 1 generated tests" in call.receipt.stderr_tail


def test_lessons_seed_pynguin_with_their_tests_pointed_at_the_module(trial, tmp_path):
    call, seen = _call(trial, tmp_path, author_payload(lessons=[lesson()]))
    assert call.ok, call.receipt.failure_detail
    args = seen["argv"]
    assert args[args.index("--initial_population_seeding") + 1] == "True"
    [(name, content)] = seen["seed"].items()
    assert name == "test_clamp.py"
    assert "from src.clamp import clamp" in content
    assert "src.clamp_old" not in content
    assert "def test_boundary_upper" in content


def test_a_relative_pynguin_path_resolves_against_the_trial_cwd_as_the_identity_binds_it(
    trial, tmp_path
):
    marker = tmp_path / "local-ran"
    local = write_script(
        trial / "tools" / "pynguin", STANDIN + f"open({str(marker)!r}, 'w').write('x')\n"
    )
    extra = ("--pynguin", "tools/pynguin")
    identity = bind_identity([*adapter_argv("pynguin"), *extra], cwd=trial, operator_identity=None)
    assert identity.tool is not None
    assert identity.tool.path == str(local)
    # Pynguin runs in a temporary directory; the relative path must not resolve there.
    call, seen = _call(trial, tmp_path, author_payload(), extra=extra)
    assert call.ok, call.receipt.failure_detail
    assert seen is not None
    assert Path(seen["cwd"]) != trial
    assert marker.exists()


def test_pynguin_refuses_to_run_without_the_danger_acknowledgement(trial, tmp_path):
    call, seen = _call(trial, tmp_path, author_payload(), danger=False)
    assert call.receipt.failure == "nonzero-exit"
    assert "PYNGUIN_DANGER_AWARE" in (call.receipt.failure_detail or "")
    assert seen is None


def test_pynguin_refuses_node_tasks(trial, tmp_path):
    call, _ = _call(trial, tmp_path, author_payload(runner="node"))
    assert call.receipt.failure == "nonzero-exit"
    assert "pytest tests only" in (call.receipt.failure_detail or "")


def test_pynguin_architect_says_plainly_that_pynguin_plans_nothing(trial, tmp_path):
    call, seen = _call(trial, tmp_path, architect_payload())
    assert call.ok
    assert call.response is not None
    [case] = call.response["cases"]
    assert case["name"] == "pynguin_search"
    assert "plans no cases" in case["intent"]
    assert seen is None


def test_pynguin_refuses_to_review(trial, tmp_path):
    call, _ = _call(trial, tmp_path, reviewer_payload())
    assert call.receipt.failure == "nonzero-exit"
    assert "unsupported-role" in (call.receipt.failure_detail or "")


def test_seed_source_is_none_without_lessons():
    payload = AuthorPayload.model_validate(author_payload())
    assert seed_source(payload, "clamp") is None


def test_keep_first_tests_leaves_a_small_suite_untouched():
    source = "def test_a():\n    pass\n"
    assert keep_first_tests(source, 3) == (source, 0)


def test_keep_first_tests_drops_whole_decorated_functions():
    kept, dropped = keep_first_tests(GENERATED, 2)
    assert dropped == 4
    compile(kept, "kept.py", "exec")
    assert kept.count("def test_") == 2
    assert kept.count("@pytest.mark.xfail") == 2


CLAMP = """\
def clamp(x: int, lo: int, hi: int) -> int:
    if lo > hi:
        raise ValueError("lo > hi")
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x
"""


def _run_generated(tmp_path: Path, files) -> subprocess.CompletedProcess[str]:
    project = tmp_path / "check"
    (project / "src").mkdir(parents=True)
    (project / "tests").mkdir()
    (project / "src" / "clamp.py").write_text(CLAMP)
    for entry in files:
        (project / entry["path"]).write_text(entry["content"])
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _real_call(trial, pynguin_executable, payload):
    env = {**os.environ, "PYNGUIN_DANGER_AWARE": "1", "LORELAB_PYNGUIN": str(pynguin_executable)}
    argv = [*adapter_argv("pynguin"), "--search-seconds", "5"]
    return call_worker(argv, "author", payload, cwd=trial, env=env, timeout_ms=110_000)


def _clamp_payload(lessons):
    payload = author_payload(lessons=lessons)
    payload["task"]["source"] = [{"path": "src/clamp.py", "content": CLAMP}]
    payload["limits"] = {"maxFiles": 1, "maxCases": 20}
    return payload


@pytest.mark.slow
def test_real_pynguin_generates_tests_that_pass_under_pytest(trial, tmp_path, pynguin_executable):
    call = _real_call(trial, pynguin_executable, _clamp_payload([]))
    assert call.ok, (call.receipt.failure_detail, call.receipt.stderr_tail)
    assert call.response is not None
    [generated] = call.response["files"]
    assert generated["path"] == "tests/test_clamp.py"
    assert "src.clamp" in generated["content"]
    run = _run_generated(tmp_path, call.response["files"])
    assert run.returncode == 0, run.stdout + run.stderr
    assert " passed" in run.stdout


@pytest.mark.slow
def test_real_pynguin_seeded_from_lessons_keeps_the_lesson_case(
    trial, tmp_path, pynguin_executable
):
    seeded = lesson()
    seeded["tests"][0]["content"] = (
        "from src.clamp_old import clamp\n\n\ndef test_boundary_upper():\n"
        "    assert clamp(3, 0, 3) == 3\n"
    )
    call = _real_call(trial, pynguin_executable, _clamp_payload([seeded]))
    assert call.ok, (call.receipt.failure_detail, call.receipt.stderr_tail)
    assert call.response is not None
    content = call.response["files"][0]["content"]
    # Pynguin's own calls use keyword arguments; the positional call comes from the lesson.
    assert "clamp(3, 0, 3)" in content
    run = _run_generated(tmp_path, call.response["files"])
    assert run.returncode == 0, run.stdout + run.stderr
