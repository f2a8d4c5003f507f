"""The Pynguin adapter: unit behaviour, a stand-in ``pynguin``, and (slow) real Pynguin 0.48.

The stand-in imitates Pynguin's command line (``--project-path``, ``--module-name``,
``--output-path``, ``--initial-population-data``): it records its argv and the seed module it
was given, and writes ``test_<module>.py`` into the output path, as Pynguin does.
"""

import ast
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from lorelab.evaluation.learning.datasets import get_dataset
from lorelab.workers import WorkerBounds, adapter_argv, bind_identity, call_worker
from lorelab.workers.adapters._agent import TIMEOUT_MARGIN_MS
from lorelab.workers.adapters._pynguin_seed import SeedReport
from lorelab.workers.adapters.pynguin import (
    asserts_nothing,
    clean_generated,
    is_xfail,
    keep_first_tests,
    seed_source,
    tighten_floats,
)
from lorelab.workers.roles import AuthorPayload
from tests.support.workers import (
    architect_payload,
    author_payload,
    lesson,
    reviewer_payload,
    write_script,
)

GENERATED = "import src.clamp\n\n" + "".join(
    '@pytest.mark.filterwarnings("ignore")\n'
    f"def test_{i}():\n    assert src.clamp.clamp({i}, 0, 3) >= 0\n\n\n"
    for i in range(6)
)

STANDIN = """
import json, os, sys
args = sys.argv[1:]
value = lambda flag: args[args.index(flag) + 1] if flag in args else None
record = {
    "argv": args,
    "cwd": os.getcwd(),
    "seed": None,
    "hashseed": os.environ.get("PYTHONHASHSEED"),
}
data = value("--initial-population-data")
if data:
    record["seed"] = {name: open(os.path.join(data, name)).read() for name in os.listdir(data)}
json.dump(record, open(os.environ["STANDIN_RECORD"], "w"))
module = value("--module-name").rsplit(".", 1)[-1]
with open(os.path.join(value("--output-path"), "test_" + module + ".py"), "w") as handle:
    handle.write(open(os.environ["STANDIN_TESTS"]).read())
"""


def _call(trial, tmp_path, payload, *, danger=True, extra=(), generated=GENERATED, standin=STANDIN):
    pynguin = write_script(tmp_path / "fake" / "pynguin", standin)
    tests = tmp_path / "generated.py"
    tests.write_text(generated)
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
    call = call_worker(
        argv, payload["role"], payload, cwd=trial, env=env, bounds=WorkerBounds(timeout_ms=60_000)
    )
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
    assert content.count("@pytest.mark.filterwarnings") == 5
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


CRASHES_IN_THREADS = (
    "if '--subprocess' not in sys.argv:\n"
    "    print('NameError: name inf is not defined', file=sys.stderr)\n"
    "    sys.exit(2)\n"
)


def test_a_search_that_fails_in_threads_runs_again_with_executions_in_child_processes(
    trial, tmp_path
):
    standin = STANDIN.replace("args = ", CRASHES_IN_THREADS + "args = ", 1)
    call, seen = _call(trial, tmp_path, author_payload(), standin=standin)
    assert call.ok, call.receipt.failure_detail
    assert seen["argv"][-4:] == ["--subprocess", "True", "--subprocess_if_recommended", "False"]
    # What is left of the tool timeout bounds the second search.
    assert int(seen["argv"][seen["argv"].index("--maximum-search-time") + 1]) <= 55
    assert "searching again with every test execution in a child process" in (
        call.receipt.stderr_tail
    )


def test_a_search_that_fails_in_child_processes_too_fails_the_call(trial, tmp_path):
    call, _ = _call(trial, tmp_path, author_payload(), standin="import sys\nsys.exit(2)\n")
    assert not call.ok
    assert "tool-failed: pynguin exited 2 for src.clamp" in (call.receipt.failure_detail or "")


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
    assert seed_source(payload, "clamp") == (None, SeedReport())


def test_keep_first_tests_leaves_a_small_suite_untouched():
    source = "def test_a():\n    pass\n"
    assert keep_first_tests(source, 3) == (source, 0)


def test_keep_first_tests_drops_whole_decorated_functions():
    kept, dropped = keep_first_tests(GENERATED, 2)
    assert dropped == 4
    compile(kept, "kept.py", "exec")
    assert kept.count("def test_") == 2
    assert kept.count("@pytest.mark.filterwarnings") == 2


def test_pynguin_runs_a_repeatable_search_counted_in_iterations_with_fixed_seeds(trial, tmp_path):
    call, seen = _call(trial, tmp_path, author_payload())
    assert call.ok, call.receipt.failure_detail
    args = seen["argv"]
    tool_timeout = (60_000 - TIMEOUT_MARGIN_MS) // 1000
    assert args[args.index("--maximum-iterations") + 1] == "40"
    # No wall-time bound asked for: the call's tool timeout (60 s less the reporting margin),
    # which lets Pynguin restart a search process that died.
    assert int(args[args.index("--maximum-search-time") + 1]) == int(tool_timeout)
    assert args[args.index("--no_xfail") + 1] == "True"
    assert args[args.index("--assertion-generation") + 1] == "SIMPLE"
    assert "--float-precision" not in args  # Pynguin 0.48 ignores it; the adapter applies it
    assert seen["hashseed"] == "0"
    assert (
        "pynguin search: seed 20240601, PYTHONHASHSEED=0, 40 iterations (wall time "
        f"{int(tool_timeout)} s, the tool timeout: lets Pynguin restart a search process that "
        "died), assertions SIMPLE, float precision 1e-06"
    ) in call.receipt.stderr_tail


def test_pynguin_options_set_iterations_seed_assertions_and_an_optional_wall_time_bound(
    trial, tmp_path
):
    extra = (
        "--iterations",
        "7",
        "--seed",
        "3",
        "--search-seconds",
        "9",
        "--assertion-generation",
        "MUTATION_ANALYSIS",
        "--float-precision",
        "0.001",
    )
    call, seen = _call(trial, tmp_path, author_payload(), extra=extra)
    assert call.ok, call.receipt.failure_detail
    args = seen["argv"]
    assert args[args.index("--maximum-iterations") + 1] == "7"
    assert args[args.index("--seed") + 1] == "3"
    assert args[args.index("--maximum-search-time") + 1] == "9"
    assert args[args.index("--assertion-generation") + 1] == "MUTATION_ANALYSIS"
    assert "wall time: not repeatable" in call.receipt.stderr_tail


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (("--iterations", "0"), "--iterations 0: must be >= 1"),
        (("--search-seconds", "0"), "--search-seconds 0: must be >= 1"),
        (("--float-precision", "0"), "--float-precision 0.0: must be between 0 and 1"),
    ],
)
def test_pynguin_refuses_bad_search_options_before_running(trial, tmp_path, extra, expected):
    call, seen = _call(trial, tmp_path, author_payload(), extra=extra)
    assert call.receipt.failure == "nonzero-exit"
    assert expected in (call.receipt.failure_detail or "")
    assert seen is None


MIXED = """import pytest
import src.clamp as module_0


@pytest.mark.xfail(strict=True)
def test_0():
    module_0.clamp(1, 3, 0)


def test_1():
    var_0 = module_0.clamp(5, 0, 3)
    assert var_0 == 3


@pytest.mark.xfail
def test_2():
    assert module_0.clamp(1, 0, 3) == 1


def test_3():
    module_0.clamp(1, 0, 3)


def test_4():
    with pytest.raises(ValueError):
        module_0.clamp(1, 3, 0)
"""


def test_xfail_marked_and_assertion_free_generated_tests_are_dropped_and_named(trial, tmp_path):
    call, _ = _call(trial, tmp_path, author_payload(), generated=MIXED)
    assert call.ok, call.receipt.failure_detail
    assert call.response is not None
    content = call.response["files"][0]["content"]
    assert "def test_1" in content
    assert "def test_4" in content
    assert "xfail" not in content
    assert "def test_0" not in content
    assert "def test_2" not in content
    assert "def test_3" not in content
    tail = call.receipt.stderr_tail
    assert "src.clamp: dropped 2 xfail-marked test(s): test_0, test_2" in tail
    assert "src.clamp: dropped 1 test(s) that assert nothing: test_3" in tail


def test_when_no_generated_test_asserts_anything_they_are_returned_for_review(trial, tmp_path):
    quiet = "import src.clamp as m\n\n\ndef test_0():\n    m.clamp(1, 0, 3)\n"
    call, _ = _call(trial, tmp_path, author_payload(), generated=quiet)
    assert call.ok, call.receipt.failure_detail
    assert call.response is not None
    assert call.response["files"][0]["content"] == quiet
    assert "no generated test asserts anything (test_0); kept as generated" in (
        call.receipt.stderr_tail
    )


def test_a_module_without_any_generated_test_fails_plainly(trial, tmp_path):
    call, _ = _call(trial, tmp_path, author_payload(), generated="import src.clamp\n")
    assert call.receipt.failure == "nonzero-exit"
    assert "no-tests: Pynguin generated no test for any module" in (
        call.receipt.failure_detail or ""
    )


def test_float_assertions_get_the_asked_tolerance_and_the_change_is_counted():
    source = (
        "def test_0():\n    assert x == pytest.approx(-101.92333333333333, abs=0.01, rel=0.01)\n"
        "    assert y == pytest.approx(2.5, abs=0.01, rel=0.01)\n"
        "    assert z == pytest.approx(1.0, abs=0.5)\n"
    )
    kept, notes = clean_generated(source, 5, 1e-06)
    assert "pytest.approx(-101.92333333333333, abs=1e-06, rel=1e-06)" in kept
    assert "pytest.approx(2.5, abs=1e-06, rel=1e-06)" in kept
    assert "pytest.approx(1.0, abs=0.5)" in kept
    assert notes == ["set the tolerance of 2 float assertion(s) from abs=0.01, rel=0.01 to 1e-06"]
    assert tighten_floats(source, 0.001)[1] == 2


def test_is_xfail_and_asserts_nothing_read_decorators_and_bodies():
    tree = ast.parse(MIXED)
    tests = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    assert [name for name, node in tests.items() if is_xfail(node)] == ["test_0", "test_2"]
    assert [name for name, node in tests.items() if asserts_nothing(node)] == ["test_0", "test_3"]
    kept, notes = clean_generated(MIXED, 1)
    assert kept.count("def test_") == 1
    assert "def test_1" in kept
    assert notes[-1] == "dropped 1 generated tests over limits.maxCases"


DEDUPE = "def dedupe(items):\n    return list(dict.fromkeys(items))\n"


def _seeded(lessons, source=DEDUPE, module="dedupe"):
    payload = author_payload(lessons=lessons)
    payload["task"]["source"] = [{"path": f"src/{module}.py", "content": source}]
    return seed_source(AuthorPayload.model_validate(payload), module, source)


def test_a_lesson_for_another_module_seeds_nothing_it_cannot_call_and_says_so():
    seed, report = _seeded([lesson()])
    assert seed is None
    assert report.dropped_tests == 1
    assert report.kept_tests == 0
    assert list(report.missing) == ["clamp"]
    [note] = report.notes("dedupe")
    assert note == (
        "seed for src.dedupe: kept 0 lesson test(s); dropped 1 test(s) and 1 statement(s) that "
        "use clamp, which src.dedupe does not define"
    )


def test_only_the_statements_whose_callables_the_module_defines_are_seeded():
    mixed = lesson()
    mixed["tests"][0]["content"] = (
        "import pytest\n"
        "import src.tools as t\n"
        "from src.tools import clamp, dedupe\n\n\n"
        "def test_both():\n"
        "    low = clamp(-1, 0, 3)\n"
        "    assert low == 0\n"
        "    assert dedupe([1, 1]) == [1]\n"
        "    assert t.dedupe([2, 2, 3]) == [2, 3]\n"
        "    assert t.clamp(9, 0, 3) == 3\n\n\n"
        "def test_clamp_only():\n"
        "    with pytest.raises(ValueError):\n"
        "        clamp(1, 3, 0)\n"
    )
    seed, report = _seeded([mixed])
    assert seed is not None
    assert "from src.dedupe import dedupe\n" in seed
    assert "clamp(" not in seed
    assert "assert dedupe([1, 1]) == [1]" in seed
    assert "assert t.dedupe([2, 2, 3]) == [2, 3]" in seed
    assert "def test_clamp_only" not in seed
    assert "import src.dedupe as t" in seed
    assert (report.kept_tests, report.dropped_tests, report.dropped_statements) == (1, 1, 4)
    compile(seed, "seed.py", "exec")


def test_a_bare_src_import_chain_is_filtered_by_its_attribute():
    chained = lesson()
    chained["tests"][0]["content"] = (
        "import src.old\n\n\ndef test_a():\n    assert src.old.dedupe([1]) == [1]\n"
        "    assert src.old.clamp(1, 0, 3) == 1\n"
    )
    seed, report = _seeded([chained])
    assert seed is not None
    assert "src.dedupe.dedupe([1])" in seed
    assert "clamp(" not in seed
    assert report.dropped_statements == 1


def test_an_unparsable_lesson_file_is_skipped_and_named():
    broken = lesson()
    broken["tests"][0]["content"] = "def test_a(:\n"
    seed, report = _seeded([broken])
    assert seed is None
    assert report.unreadable == ["lesson-1:tests/test_clamp_old.py"]
    assert (
        "skipped unparsable lesson files lesson-1:tests/test_clamp_old.py"
        in report.notes("dedupe")[0]
    )


def test_pynguin_runs_unseeded_when_no_lesson_statement_fits_and_says_so(trial, tmp_path):
    payload = author_payload(lessons=[lesson()])
    payload["task"]["source"] = [{"path": "src/clamp.py", "content": DEDUPE}]
    call, seen = _call(trial, tmp_path, payload)
    assert call.ok, call.receipt.failure_detail
    assert "--initial_population_seeding" not in seen["argv"]
    tail = call.receipt.stderr_tail
    assert "use clamp, which src.clamp does not define" in tail
    assert "no lesson statement fits src.clamp: Pynguin runs unseeded" in tail


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


def _real_call(trial, pynguin_executable, payload, iterations=20):
    env = {**os.environ, "PYNGUIN_DANGER_AWARE": "1", "LORELAB_PYNGUIN": str(pynguin_executable)}
    argv = [*adapter_argv("pynguin"), "--iterations", str(iterations)]
    return call_worker(
        argv, "author", payload, cwd=trial, env=env, bounds=WorkerBounds(timeout_ms=110_000)
    )


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


@pytest.mark.slow
def test_two_real_runs_on_the_same_input_give_the_same_tests_under_load(
    trial, tmp_path, pynguin_executable
):
    # Both runs at once, on a machine with other work: each loads the other. The search is
    # counted in iterations and seeded, so load cannot change what it finds.
    payload = _clamp_payload([])
    with ThreadPoolExecutor(max_workers=2) as pool:
        calls = list(
            pool.map(lambda _: _real_call(trial, pynguin_executable, payload, 30), range(2))
        )
    for call in calls:
        assert call.ok, (call.receipt.failure_detail, call.receipt.stderr_tail)
    first, second = (call.response["files"] for call in calls)  # type: ignore[index]
    assert first == second
    assert "def test_" in first[0]["content"]


COLORS = """\
def lightness(r: float, g: float, b: float) -> float:
    return (max(r, g, b) + min(r, g, b)) / 2.0


def spread(r: float, g: float, b: float) -> tuple[float, float]:
    return max(r, g, b) - min(r, g, b), (r + g + b) / 3.0
"""


@pytest.mark.slow
def test_real_pynguin_asserts_float_and_tuple_results_tightly_enough_to_catch_small_bugs(
    trial, tmp_path, pynguin_executable
):
    payload = author_payload()
    payload["task"]["source"] = [{"path": "src/colors.py", "content": COLORS}]
    payload["limits"] = {"maxFiles": 1, "maxCases": 20}
    call = _real_call(trial, pynguin_executable, payload, 30)
    assert call.ok, (call.receipt.failure_detail, call.receipt.stderr_tail)
    assert call.response is not None
    content = call.response["files"][0]["content"]
    assert "pytest.approx(" in content
    assert "abs=1e-06, rel=1e-06" in content
    assert "abs=0.01" not in content
    # A bug far below Pynguin's default 1% tolerance is still caught.
    defect = COLORS.replace("/ 2.0", "/ 2.0001").replace("/ 3.0", "/ 3.0001")
    project = tmp_path / "defect"
    (project / "src").mkdir(parents=True)
    (project / "tests").mkdir()
    for source, name in ((COLORS, "good"), (defect, "bad")):
        (project / "src" / "colors.py").write_text(source)
        (project / "tests" / "test_colors.py").write_text(content)
        run = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
            cwd=project,
            capture_output=True,
            text=True,
            timeout=120,
        )
        expected = 0 if name == "good" else 1
        assert run.returncode == expected, (name, run.stdout + run.stderr)


def _two_callable_lesson():
    mixed = lesson()
    mixed["tests"][0]["content"] = (
        "from src.clamp_old import chunk, clamp\n\n\ndef test_a():\n"
        "    assert clamp(3, 0, 3) == 3\n    assert chunk([1], 1) == [[1]]\n"
    )
    return mixed


def test_the_response_reports_the_lesson_statements_kept_and_dropped_with_the_reason(
    trial, tmp_path
):
    call, seen = _call(trial, tmp_path, author_payload(lessons=[_two_callable_lesson()]))
    assert call.ok, call.receipt.failure_detail
    assert call.response is not None
    seed = call.response["lessonSeed"]
    assert (seed["kept"], seed["dropped"]) == (1, 1)
    assert seed["reasons"] == [
        "src.clamp: 1 statement(s) use chunk that src.clamp does not define, or what such a "
        "statement assigned"
    ]
    assert "--initial_population_seeding" in seen["argv"]


def test_lesson_seeding_off_runs_unseeded_and_reports_every_lesson_statement_dropped(
    trial, tmp_path
):
    payload = author_payload(lessons=[_two_callable_lesson()])
    call, seen = _call(trial, tmp_path, payload, extra=("--lesson-seeding", "off"))
    assert call.ok, call.receipt.failure_detail
    assert call.response is not None
    assert "--initial_population_seeding" not in seen["argv"]
    seed = call.response["lessonSeed"]
    assert (seed["kept"], seed["dropped"]) == (0, 2)
    assert seed["reasons"] == ["src.clamp: lesson seeding is off (--lesson-seeding off)"]


def test_without_lessons_the_response_reports_no_lesson_statement(trial, tmp_path):
    call, _ = _call(trial, tmp_path, author_payload())
    assert call.response is not None
    assert call.response["lessonSeed"] == {"kept": 0, "dropped": 0, "reasons": []}


# --- real Pynguin on two `evolution` specifications ------------------------------------------

# A positional call of each specification's own history test: Pynguin writes its own calls with
# keyword arguments, so the call can only come from the lesson seed.
EVOLUTION_SEED_MARKERS = {
    "bisect-left": ".bisect_left([1, 2, 2, 3], 2)",
    "time-format": ".format_time(23, 59, 59, 5)",
}


def _evolution_call(trial, pynguin_executable, specification, seeding):
    from lorelab.evaluation.learning import get_dataset

    manifest = get_dataset("evolution")
    fixture = next(f for f in manifest.fixtures if f.id == specification)
    # The memory arm's lesson: the past release holding this module's earlier version.
    (release,) = [
        item
        for item in manifest.history
        if {e.path for e in item.files} & {e.path for e in fixture.files}
    ]
    payload = author_payload(
        lessons=[
            {
                "id": release.id,
                "specificationId": release.specification_id,
                "requirements": release.requirements,
                "tests": [entry.model_dump() for entry in release.tests],
                "score": 1.0,
            }
        ]
    )
    payload["task"]["source"] = [entry.model_dump() for entry in fixture.files]
    payload["task"]["requirements"] = fixture.requirements
    payload["limits"] = {"maxFiles": 1, "maxCases": 20}
    env = {**os.environ, "PYNGUIN_DANGER_AWARE": "1", "LORELAB_PYNGUIN": str(pynguin_executable)}
    argv = [*adapter_argv("pynguin"), "--lesson-seeding", seeding]
    call = call_worker(
        argv, "author", payload, cwd=trial, env=env, bounds=WorkerBounds(timeout_ms=115_000)
    )
    assert call.ok, (call.receipt.failure_detail, call.receipt.stderr_tail)
    assert call.response is not None
    return call.response


def _seed_reached_the_search(response, specification):
    content = response["files"][0]["content"]
    return response["lessonSeed"]["kept"] > 0 and EVOLUTION_SEED_MARKERS[specification] in content


@pytest.mark.slow
@pytest.mark.parametrize("specification", sorted(EVOLUTION_SEED_MARKERS))
def test_real_pynguin_on_an_evolution_specification_gets_the_memory_arms_seed_into_its_search(
    trial, pynguin_executable, specification
):
    response = _evolution_call(trial, pynguin_executable, specification, "on")
    assert _seed_reached_the_search(response, specification), response


@pytest.mark.slow
@pytest.mark.parametrize("specification", sorted(EVOLUTION_SEED_MARKERS))
def test_with_seeding_off_the_seed_check_fails_on_the_same_evolution_specification(
    trial, pynguin_executable, specification
):
    response = _evolution_call(trial, pynguin_executable, specification, "off")
    assert not _seed_reached_the_search(response, specification), response


def _evolution_payload(fixture_id, lesson_items):
    """An author payload for one ``evolution`` specification, with history items as lessons."""
    dataset = get_dataset("evolution")
    fixture = dataset.fixture(fixture_id)
    payload = author_payload(
        lessons=[
            {
                "id": item.id,
                "specificationId": item.specification_id,
                "requirements": item.requirements,
                "tests": [entry.model_dump(by_alias=True) for entry in item.tests],
                "score": 1.0,
            }
            for item in dataset.history
            if item.id in lesson_items
        ]
    )
    payload["task"]["requirements"] = fixture.requirements
    payload["task"]["source"] = [entry.model_dump(by_alias=True) for entry in fixture.files]
    payload["limits"] = {"maxFiles": 1, "maxCases": 20}
    return payload


@pytest.mark.slow
@pytest.mark.parametrize(
    ("arm", "lessons"),
    [
        ("no-memory", ()),
        ("memory", ("history-release-6",)),  # commonprefix's own earlier release
        ("placebo", ("history-release-3",)),  # another specification's release
    ],
)
def test_real_pynguin_completes_commonprefix_in_every_arm(
    trial, tmp_path, pynguin_executable, arm, lessons
):
    # Pynguin 0.48's search process dies executing a generated test on this module (CPython
    # crashes in a thread of the search); with no wall-time budget Pynguin cannot restart it
    # and exits 2 ("Maximum search time is zero"). With one, it restarts the search with every
    # test execution in a child process.
    payload = _evolution_payload("commonprefix", lessons)
    env = {**os.environ, "PYNGUIN_DANGER_AWARE": "1", "LORELAB_PYNGUIN": str(pynguin_executable)}
    call = call_worker(
        adapter_argv("pynguin"),
        "author",
        payload,
        cwd=trial,
        env=env,
        bounds=WorkerBounds(timeout_ms=120_000),
    )
    assert call.ok, (call.receipt.failure_detail, call.receipt.stderr_tail)
    assert call.response is not None
    [generated] = call.response["files"]
    assert generated["path"] == "tests/test_commonprefix.py"
    assert "def test_" in generated["content"]
    kept = call.response["lessonSeed"]["kept"]
    if arm == "memory":
        assert kept > 0
    else:
        assert kept == 0
