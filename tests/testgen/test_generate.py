import json
import sys
import textwrap

import pytest
from click.testing import CliRunner

from lorelab.cli.main import app
from lorelab.memory import AddLessonRequest, open_store
from lorelab.testgen import GenerateOptions, generate_for_project
from lorelab.workers import WorkerBounds
from lorelab.workspace import FileEntry
from tests.support.testgen import PASSING_TEST, REQUIREMENTS, SOURCE, scripted_worker

CLAMP_HISTORY_TESTS = textwrap.dedent(
    """
    from src.clamp import clamp


    def test_value_inside_range_is_returned():
        assert clamp(2, 0, 5) == 2


    def test_boundary_values_are_kept():
        assert clamp(5, 0, 5) == 5


    def test_invalid_range_raises():
        import pytest
        with pytest.raises(ValueError):
            clamp(1, 5, 0)
    """
).lstrip()


def _options(project, tmp_path, agent, **overrides):
    values = {
        "project": project,
        "requirements": REQUIREMENTS,
        "sources": ("src/clip.py",),
        "agent": tuple(agent),
        "runner": "pytest",
        "memory": False,
        "stability_runs": 2,
        "timeout_s": 60.0,
    }
    values.update(overrides)
    return GenerateOptions(**values)


def _generate(project, tmp_path, *extra):
    result = CliRunner().invoke(
        app,
        [
            "tests",
            "generate",
            str(project),
            "--requirements",
            str(tmp_path / "requirements.txt"),
            "--source",
            "src/clip.py",
            "--agent",
            "fixture",
            "--stability-runs",
            "2",
            "--json",
            *extra,
        ],
    )
    return result, json.loads(result.stdout) if result.stdout.startswith("{") else None


def _store_clamp_lesson(home):
    store = open_store(home)
    try:
        store.add_lesson(
            AddLessonRequest(
                lesson_id="history-clamp",
                specification_id="clamp",
                requirements="Clamp a number into a closed range [low, high]; boundary values are "
                "kept and an invalid range (low above high) raises ValueError.",
                files=[],
                tests=[FileEntry(path="tests/test_clamp.py", content=CLAMP_HISTORY_TESTS)],
                validation={"runs": 2},
            )
        )
    finally:
        store.close()


def test_fixture_end_to_end_without_memory_writes_example_tests(project, tmp_path):
    result, record = _generate(project, tmp_path, "--no-memory")
    assert result.exit_code == 0, result.output
    assert record["recall"] is None
    assert record["generation"]["lessonsReachedAuthor"] == []
    written = (project / "tests" / "test_clip.py").read_text()
    assert "clip(5, 0, 3)" in written
    assert "clip(3, 0, 3)" not in written  # edge cases need a lesson's case pattern


def test_lessons_reach_the_author_and_change_its_output(project, tmp_path):
    home = tmp_path / "home"
    _store_clamp_lesson(home)
    result, record = _generate(project, tmp_path, "--home", str(home))
    assert result.exit_code == 0, result.output
    assert [lesson["id"] for lesson in record["recall"]["lessons"]] == ["history-clamp"]
    assert record["generation"]["lessonsReachedAuthor"] == ["history-clamp"]
    written = (project / "tests" / "test_clip.py").read_text()
    assert "clip(3, 0, 3)" in written  # boundary: a case pattern of the lesson
    assert "ValueError" in written  # invalid: another one
    cases = [case["id"] for case in record["validation"]["cases"]]
    assert len(cases) == 4


def test_unrelated_lesson_stays_below_the_floor(project, tmp_path):
    home = tmp_path / "home"
    store = open_store(home)
    try:
        store.add_lesson(
            AddLessonRequest(
                lesson_id="history-csv",
                specification_id="csv",
                requirements="Split a line of comma separated fields honouring double quotes.",
                files=[],
                tests=[
                    FileEntry(
                        path="tests/test_csv.py", content="def test_quoted_field():\n    pass\n"
                    )
                ],
                validation={},
            )
        )
    finally:
        store.close()
    result, record = _generate(project, tmp_path, "--home", str(home))
    assert result.exit_code == 0, result.output
    assert record["recall"]["lessons"] == []
    assert record["generation"]["lessonsReachedAuthor"] == []


def test_reviewer_rejection_ends_the_generation_and_applies_nothing(project, tmp_path):
    agent = scripted_worker(
        tmp_path,
        files=[("tests/test_clip.py", PASSING_TEST)],
        verdict="reject",
        reasons=["the tests do not cover the invalid range"],
    )
    result = generate_for_project(_options(project, tmp_path, agent))
    assert result.generation.status == "rejected", result.generation.reason
    assert "invalid range" in result.generation.reason
    assert [r.role for r in result.generation.roles] == ["architect", "author", "reviewer"]
    assert result.validation is None
    assert not (project / "tests").exists()


def test_cli_exit_code_is_1_for_a_rejection(project, tmp_path):
    agent = scripted_worker(
        tmp_path, files=[("tests/test_clip.py", PASSING_TEST)], verdict="reject", reasons=["no"]
    )
    result = CliRunner().invoke(
        app,
        [
            "tests",
            "generate",
            str(project),
            "--requirements",
            str(tmp_path / "requirements.txt"),
            "--source",
            "src/clip.py",
            "--agent",
            json.dumps(agent),
            "--no-memory",
        ],
    )
    assert result.exit_code == 1
    assert "reviewer rejected" in result.stdout


def test_author_whose_test_fails_on_the_reference_gets_nothing_applied(project, tmp_path):
    failing = PASSING_TEST + "\n\ndef test_wrong_expectation():\n    assert clip(5, 0, 3) == 5\n"
    agent = scripted_worker(tmp_path, files=[("tests/test_clip.py", failing)])
    result = generate_for_project(_options(project, tmp_path, agent))
    assert result.generation.status == "approved"
    assert not result.validation.valid
    verdicts = {case.id: case.status for case in result.validation.cases}
    assert verdicts["tests/test_clip.py::test_wrong_expectation"] == "failed"
    assert verdicts["tests/test_clip.py::test_above_range_is_clipped"] == "passed"
    assert not result.apply.applied
    assert not (project / "tests").exists()


def test_keep_passing_drops_the_failing_case_and_applies_the_rest(project, tmp_path):
    failing = PASSING_TEST + "\n\ndef test_wrong_expectation():\n    assert clip(5, 0, 3) == 5\n"
    agent = scripted_worker(tmp_path, files=[("tests/test_clip.py", failing)])
    result = generate_for_project(_options(project, tmp_path, agent, keep_passing=True))
    assert result.apply.applied
    assert result.apply.dropped_cases == ["tests/test_clip.py::test_wrong_expectation"]
    assert result.apply.kept_validation.valid
    written = (project / "tests" / "test_clip.py").read_text()
    assert "test_wrong_expectation" not in written
    assert "test_above_range_is_clipped" in written


@pytest.mark.parametrize(
    "path", ["src/clip.py", "tests/conftest.py", "src/helper.py", "pytest.ini"]
)
def test_author_writing_source_or_configuration_is_refused(project, tmp_path, path):
    agent = scripted_worker(
        tmp_path, files=[(path, "x = 1\n"), ("tests/test_clip.py", PASSING_TEST)]
    )
    result = generate_for_project(_options(project, tmp_path, agent))
    refused_in_transport = result.generation.status == "failed"
    if refused_in_transport:
        assert result.generation.roles[1].failure == "invalid-response"
        assert path in result.generation.reason
    else:
        assert not result.validation.valid
        assert any(path in violation for violation in result.validation.path_violations)
    assert (project / "src" / "clip.py").read_text() == SOURCE.content
    assert not (project / "tests").exists()


def test_flaky_generated_test_is_caught_by_the_repeated_runs(project, tmp_path):
    # The counter lives in the project copy: outside it, a sandboxed run may not write.
    flaky = PASSING_TEST + textwrap.dedent(
        """

        def test_flaky_every_other_run():
            from pathlib import Path
            counter = Path(__file__).parent / "flaky-counter"
            count = int(counter.read_text()) if counter.exists() else 0
            counter.write_text(str(count + 1))
            assert count % 2 == 0
        """
    )
    agent = scripted_worker(tmp_path, files=[("tests/test_clip.py", flaky)])
    result = generate_for_project(_options(project, tmp_path, agent))
    assert not result.validation.valid
    assert result.validation.reason.startswith("unstable")
    verdicts = {case.id: case.status for case in result.validation.cases}
    assert verdicts["tests/test_clip.py::test_flaky_every_other_run"] == "flaky"
    assert not result.apply.applied


def test_order_dependent_pair_is_caught_by_the_reverse_run(project, tmp_path):
    dependent = textwrap.dedent(
        """
        STATE = []


        def test_first_sets_state():
            STATE.append(1)
            assert STATE == [1]


        def test_second_needs_state():
            assert STATE == [1]
        """
    ).lstrip()
    agent = scripted_worker(tmp_path, files=[("tests/test_clip.py", dependent)])
    result = generate_for_project(_options(project, tmp_path, agent))
    assert result.validation.stability.stable
    assert not result.validation.valid
    assert "order-dependent" in result.validation.reason
    verdicts = {case.id: case.status for case in result.validation.cases}
    assert "order-dependent" in verdicts.values()
    assert not result.apply.applied


def test_existing_test_file_is_never_overwritten(project, tmp_path):
    (project / "tests").mkdir()
    (project / "tests" / "test_clip_extra.py").write_text("# mine\n")
    agent = scripted_worker(tmp_path, files=[("tests/test_clip_extra.py", PASSING_TEST)])
    result = generate_for_project(_options(project, tmp_path, agent))
    assert not result.validation.valid
    assert "already exists" in result.validation.path_violations[0]
    assert (project / "tests" / "test_clip_extra.py").read_text() == "# mine\n"


def test_an_existing_test_file_for_the_source_is_refused_before_any_worker_call(project, tmp_path):
    (project / "tests").mkdir()
    (project / "tests" / "test_clip.py").write_text("# mine\n")
    calls = tmp_path / "calls"
    calls.mkdir()
    counting = tmp_path / "counting_worker.py"
    counting.write_text(
        "import sys, uuid\nfrom pathlib import Path\n"
        f"Path({str(calls)!r}, uuid.uuid4().hex).write_text('called')\n"
        "from lorelab.testing.fixture import main\nmain()\n"
    )
    (tmp_path / "requirements.txt").write_text(REQUIREMENTS)
    result = CliRunner().invoke(
        app,
        ["tests", "generate", str(project), "--requirements", str(tmp_path / "requirements.txt"),
         "--source", "src/clip.py", "--agent", json.dumps([sys.executable, str(counting)])],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    [line] = result.stderr.strip().splitlines()
    assert "tests/test_clip.py already exists" in line
    assert "no worker was called" in line
    assert list(calls.iterdir()) == []
    assert (project / "tests" / "test_clip.py").read_text() == "# mine\n"


def test_dry_run_writes_nothing(project, tmp_path):
    agent = scripted_worker(tmp_path, files=[("tests/test_clip.py", PASSING_TEST)])
    result = generate_for_project(_options(project, tmp_path, agent, dry_run=True))
    assert result.validation.valid
    assert result.apply.written == ["tests/test_clip.py"]
    assert not result.apply.applied
    assert not (project / "tests").exists()


def test_worker_timeout_ends_the_generation_without_retry(project, tmp_path):
    script = tmp_path / "slow.py"
    script.write_text("import time\ntime.sleep(30)\n")
    import sys

    result = generate_for_project(
        _options(
            project, tmp_path, [sys.executable, str(script)], bounds=WorkerBounds(timeout_ms=1000)
        )
    )
    assert result.generation.status == "failed"
    assert [r.failure for r in result.generation.roles] == ["timeout"]
    assert "architect call failed (timeout)" in result.generation.reason


def test_conftest_is_written_only_when_explicitly_allowed(project, tmp_path):
    conftest = "import pytest\n\n\n@pytest.fixture\ndef low():\n    return 0\n"
    uses = (
        "from src.clip import clip\n\n\n"
        "def test_uses_fixture(low):\n    assert clip(-5, low, 3) == 0\n"
    )
    agent = scripted_worker(
        tmp_path, files=[("tests/conftest.py", conftest), ("tests/test_clip.py", uses)]
    )
    refused = generate_for_project(_options(project, tmp_path, agent))
    assert refused.generation.status == "failed"
    assert "allowConftest" in refused.generation.reason
    allowed = generate_for_project(_options(project, tmp_path, agent, allow_conftest=True))
    assert allowed.validation.valid, allowed.validation.reason
    assert allowed.apply.applied
    assert (project / "tests" / "conftest.py").read_text() == conftest


def test_skipped_and_xfail_cases_are_not_passing_cases(project, tmp_path):
    skipping = PASSING_TEST + textwrap.dedent(
        """

        import pytest


        def test_skipped():
            pytest.skip("not today")


        @pytest.mark.xfail(reason="expected to fail")
        def test_expected_failure():
            assert clip(5, 0, 3) == 5
        """
    )
    agent = scripted_worker(tmp_path, files=[("tests/test_clip.py", skipping)])
    result = generate_for_project(_options(project, tmp_path, agent))
    assert not result.validation.valid
    assert "skipped" in result.validation.reason
    verdicts = {case.id: case.status for case in result.validation.cases}
    assert verdicts["tests/test_clip.py::test_skipped"] == "skipped"
    assert not result.apply.applied


def test_the_projects_own_failing_tests_do_not_block_or_get_judged(project, tmp_path):
    (project / "tests").mkdir()
    (project / "tests" / "test_old.py").write_text("def test_old_broken():\n    assert False\n")
    agent = scripted_worker(tmp_path, files=[("tests/test_clip.py", PASSING_TEST)])
    result = generate_for_project(_options(project, tmp_path, agent, keep_passing=True))
    assert result.validation.valid, result.validation.reason
    assert all(case.id.startswith("tests/test_clip.py::") for case in result.validation.cases)
    assert result.apply.applied
    assert result.apply.dropped_cases == []


def test_lessons_for_another_runner_are_not_recalled(project, tmp_path):
    home = tmp_path / "home"
    store = open_store(home)
    try:
        store.add_lesson(
            AddLessonRequest(
                lesson_id="history-clamp-js",
                specification_id="clamp-js",
                requirements="Clamp a number into a closed range [low, high]; boundary values are "
                "kept and an invalid range (low above high) raises a RangeError.",
                files=[],
                tests=[
                    FileEntry(
                        path="test/clamp.test.js",
                        content="test('boundary values are kept', () => {});\n",
                    )
                ],
                validation={},
            )
        )
    finally:
        store.close()
    result, record = _generate(project, tmp_path, "--home", str(home))
    assert result.exit_code == 0, result.output
    assert record["recall"]["lessons"] == []


def test_bad_settings_refuse_before_the_output_directory_is_created(project, tmp_path):
    output = tmp_path / "receipts"
    result, _ = _generate(project, tmp_path, "--timeout-ms", "0", "--output", str(output))
    assert result.exit_code == 2
    assert not output.exists()
    missing = json.dumps(["no-such-program-anywhere-xyz"])
    result = CliRunner().invoke(
        app,
        [
            "tests",
            "generate",
            str(project),
            "--requirements",
            str(tmp_path / "requirements.txt"),
            "--source",
            "src/clip.py",
            "--agent",
            missing,
            "--output",
            str(output),
        ],
    )
    assert result.exit_code == 2
    assert not output.exists()


def test_applied_tests_follow_the_umask_not_receipt_permissions(project, tmp_path):
    import os
    import stat

    agent = scripted_worker(tmp_path, files=[("tests/test_clip.py", PASSING_TEST)])
    old = os.umask(0o022)
    try:
        result = generate_for_project(_options(project, tmp_path, agent))
    finally:
        os.umask(old)
    assert result.apply.applied
    assert stat.S_IMODE((project / "tests" / "test_clip.py").stat().st_mode) == 0o644
    assert stat.S_IMODE((project / "tests").stat().st_mode) == 0o755


def _generate_cli(project, tmp_path, agent, *extra):
    return CliRunner().invoke(
        app,
        [
            "tests",
            "generate",
            str(project),
            "--requirements",
            str(tmp_path / "requirements.txt"),
            "--source",
            "src/clip.py",
            "--agent",
            json.dumps(agent),
            "--no-memory",
            "--stability-runs",
            "2",
            "--json",
            *extra,
        ],
    )


@pytest.mark.parametrize(
    ("mine", "authored"),
    [
        ("tests/test_Clip.py", "tests/test_clip.py"),
        ("Tests/test_mine.py", "tests/test_clip.py"),
        ("tests/test_clip.py/keep.txt", "tests/test_clip.py"),
    ],
)
def test_a_test_path_that_collides_with_the_project_only_by_case_or_kind_is_a_refusal(
    project, tmp_path, mine, authored
):
    (project / mine).parent.mkdir(parents=True, exist_ok=True)
    (project / mine).write_text("# mine\n")
    before = sorted(str(p.relative_to(project)) for p in project.rglob("*"))
    agent = scripted_worker(tmp_path, files=[(authored, PASSING_TEST)])
    result = _generate_cli(project, tmp_path, agent)
    # The worker's choice of path is an outcome (exit 1, the record printed), not bad input.
    assert result.exit_code == 1, result.output
    record = json.loads(result.stdout)
    assert record["validation"]["pathViolations"][0].startswith(f"{authored}: the project")
    assert record["apply"]["applied"] is False
    assert sorted(str(p.relative_to(project)) for p in project.rglob("*")) == before


def test_a_symlink_at_the_test_path_is_never_written_through_and_the_refusal_is_recorded(
    project, tmp_path
):
    (project / "tests").mkdir()
    target = tmp_path / "elsewhere.py"
    (project / "tests" / "test_clip.py").symlink_to(target)
    agent = scripted_worker(tmp_path, files=[("tests/test_clip.py", PASSING_TEST)])
    for extra in ((), ("--dry-run",)):
        result = _generate_cli(project, tmp_path, agent, *extra)
        assert result.exit_code == 1, result.output
        record = json.loads(result.stdout)
        # The project reader skips symlinks, so validation passes; applying must still refuse.
        assert record["validation"]["valid"] is True
        assert record["apply"]["applied"] is False
        assert record["apply"]["written"] == []
        assert "already has a symlink there" in record["apply"]["reason"]
    assert not target.exists()
    assert (project / "tests" / "test_clip.py").is_symlink()


def test_a_project_named_through_a_symlink_gets_its_tests_written_in_the_real_directory(
    project, tmp_path
):
    link = tmp_path / "project-link"
    link.symlink_to(project, target_is_directory=True)
    agent = scripted_worker(tmp_path, files=[("tests/test_clip.py", PASSING_TEST)])
    result = _generate_cli(link, tmp_path, agent)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["apply"]["written"] == ["tests/test_clip.py"]
    assert (project / "tests" / "test_clip.py").read_text() == PASSING_TEST
    assert link.is_symlink()


def test_a_generated_test_cannot_touch_files_outside_its_project_copy(project, tmp_path):
    from lorelab.io import probe_sandbox

    support = probe_sandbox()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    hostile = PASSING_TEST + textwrap.dedent(
        f"""

        def test_deletes_a_file_it_does_not_own():
            import os
            try:
                os.remove({str(victim)!r})
            except OSError:
                pass
        """
    )
    agent = scripted_worker(tmp_path, files=[("tests/test_clip.py", hostile)])
    result = generate_for_project(_options(project, tmp_path, agent))
    runs = result.validation.stability.runs
    # Every run records the confinement it really had.
    assert {run.sandbox for run in runs} == {support.kind}
    if support.kind == "bubblewrap":
        assert victim.read_text() == "keep me\n"
