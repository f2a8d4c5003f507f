"""Bad and partial input: one line and exit 2 when nothing can be rendered; a page that says what
is missing (exit 1) for a partial directory; never a traceback."""

import json
import os
import stat
import subprocess
import sys

import pytest

from lorelab.evaluation.conditions import (
    ManifestReceipt as ConditionsManifestReceipt,
)
from lorelab.evaluation.conditions import (
    PreflightReceipt,
    RunAborted,
    RunFinished,
    RunReceipt,
)
from lorelab.evaluation.learning.records import ManifestReceipt, Summary, TrialRecord
from lorelab.io import read_model
from tests.support.report_page import DATA, lorelab, lorelab_process, parse


def _one_line_refusal(done, *needles):
    assert done.returncode == 2
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    for needle in needles:
        assert needle in lines[0]


def test_a_directory_that_does_not_exist_is_refused_in_one_line(tmp_path):
    _one_line_refusal(lorelab_process("report", str(tmp_path / "nope")), "no such directory")


def test_a_file_instead_of_a_directory_is_refused(tmp_path):
    path = tmp_path / "summary.json"
    path.write_text("{}")
    _one_line_refusal(lorelab_process("report", str(path)), "not a directory")


def test_a_directory_no_evaluation_wrote_is_refused_and_nothing_is_written(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    _one_line_refusal(lorelab("report", str(tmp_path)), "not a lorelab evaluation output")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_two_directories_of_different_kinds_are_refused(learning_dir, conditions_dir, tmp_path):
    done = lorelab_process("report", str(learning_dir), str(conditions_dir))
    _one_line_refusal(done, "learning evaluation", "four-condition evaluation", "same kind")
    assert not (learning_dir / "report-side-by-side.html").exists()


def test_three_directories_are_a_usage_error(learning_dir, tmp_path):
    done = lorelab_process("report", str(learning_dir), str(learning_dir), str(learning_dir))
    _one_line_refusal(done, "unexpected extra argument")


def test_an_output_that_is_a_directory_is_refused(learning_dir, tmp_path):
    _one_line_refusal(lorelab("report", str(learning_dir), "--output", str(tmp_path)), "--output")


def test_an_output_in_a_missing_directory_is_refused(learning_dir, tmp_path):
    target = tmp_path / "missing" / "page.html"
    _one_line_refusal(
        lorelab("report", str(learning_dir), "--output", str(target)), "does not exist"
    )


def test_a_learning_run_without_a_summary_gives_a_page_saying_so(learning_dir):
    (learning_dir / "summary.json").unlink()
    (learning_dir / "summary.md").unlink()
    done = lorelab_process("report", str(learning_dir))
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert (
        "summary.json: missing (no summary was written (controller outcome: complete))"
        in done.stderr
    )
    page = parse(learning_dir / "report.html")
    assert page.sections[0] == "problems"
    assert "No summary: this run has no label" in page.text
    assert len(page.table("paired").rows) == 9  # the trials are still shown, from their receipts


@pytest.mark.parametrize(
    ("name", "content", "problem"),
    [
        ("summary.json", b'{"arms": ', "summary.json: unreadable"),
        ("summary.json", b"[1, 2]", "summary.json: unreadable"),
        ("manifest.json", b"\xff\xfe not utf-8", "manifest.json: unreadable"),
        ("controller.json", b'{"outcome": NaN}', "controller.json: unreadable"),
    ],
)
def test_a_malformed_learning_receipt_is_named_and_the_rest_is_rendered(
    learning_dir, name, content, problem
):
    (learning_dir / name).write_bytes(content)
    done = lorelab_process("report", str(learning_dir))
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert problem in done.stderr
    page = parse(learning_dir / "report.html")
    assert problem in page.text
    assert "detection" in page.sections


def test_a_trial_receipt_of_the_wrong_shape_is_named_and_counted_missing(learning_dir):
    trial = sorted((learning_dir / "trials").iterdir())[0]
    trial.write_text(json.dumps({"position": "first"}))
    done = lorelab("report", str(learning_dir))
    assert done.returncode == 1
    text = parse(learning_dir / "report.html").text
    assert f"trials/{trial.name}: unreadable" in text
    assert "1 of 18 scheduled trials have no receipt (positions 1)" in text


def test_an_aborted_learning_run_says_where_it_stopped(learning_dir):
    for path in [learning_dir / "summary.json", learning_dir / "summary.md"]:
        path.unlink()
    for path in sorted((learning_dir / "trials").iterdir())[5:]:
        path.unlink()
    controller = json.loads((learning_dir / "controller.json").read_text())
    controller.update(outcome="interrupted", trialsMs=None)
    (learning_dir / "controller.json").write_text(json.dumps(controller))
    done = lorelab("report", str(learning_dir))
    assert done.returncode == 1
    text = parse(learning_dir / "report.html").text
    assert "controller outcome: interrupted" in text
    assert "13 of 18 scheduled trials have no receipt" in text


def test_an_unreadable_receipt_file_is_named(learning_dir):
    if os.geteuid() == 0:
        target = learning_dir / "summary.json"
        target.unlink()
        target.mkdir()  # root reads every file; a directory in its place cannot be read
    else:
        (learning_dir / "summary.json").chmod(0)
    done = lorelab("report", str(learning_dir))
    assert done.returncode == 1
    assert "summary.json: unreadable" in parse(learning_dir / "report.html").text


def test_open_without_a_browser_still_writes_the_page_and_says_so(learning_dir):
    env = {**os.environ, "BROWSER": "false"}
    done = lorelab_process("report", str(learning_dir), "--open", env=env)
    assert done.returncode == 0, done.stderr
    assert "no web browser could be started" in done.stderr
    assert (learning_dir / "report.html").is_file()


@pytest.mark.parametrize("argv", [["--help"], ["report", "--help"]])
def test_help_lists_the_command_without_importing_the_report_package(argv):
    code = (
        "import sys\n"
        "from lorelab.cli.main import app\n"
        f"sys.argv = ['lorelab', *{argv!r}]\n"
        "try:\n    app(prog_name='lorelab')\nexcept SystemExit:\n    pass\n"
        "heavy = ('lorelab.report', 'lorelab.eval')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    *help_lines, loaded = out.stdout.strip().splitlines()
    assert loaded == "[]"
    assert any(line.split()[:1] == ["report"] for line in help_lines) or "DIR [DIR2]" in out.stdout


@pytest.mark.parametrize(
    ("directory", "files"),
    [
        ("learning", {"manifest.json": ManifestReceipt, "summary.json": Summary}),
        ("learning-failed", {"manifest.json": ManifestReceipt, "summary.json": Summary}),
        (
            "conditions",
            {
                "manifest.json": ConditionsManifestReceipt,
                "preflight.json": PreflightReceipt,
                "run.json": RunFinished,
            },
        ),
        (
            "conditions-failed",
            {
                "manifest.json": ConditionsManifestReceipt,
                "preflight.json": PreflightReceipt,
                "run.json": RunFinished,
            },
        ),
        ("conditions-aborted", {"aborted.json": RunAborted}),
    ],
)
def test_the_recorded_runs_still_parse_with_the_current_models(directory, files):
    for name, model in files.items():
        parsed = read_model(DATA / directory / name, model, "fixture")
        assert model.model_validate(parsed.to_json()) == parsed  # and round-trip
    learning = directory.startswith("learning")
    unit = TrialRecord if learning else RunReceipt
    for path in sorted((DATA / directory / ("trials" if learning else "runs")).iterdir()):
        read_model(path, unit, "fixture")


def test_receipt_permissions_are_not_changed_by_a_report(learning_dir):
    before = {p: stat.S_IMODE(p.stat().st_mode) for p in learning_dir.rglob("*")}
    assert lorelab("report", str(learning_dir)).returncode == 0
    after = {p: stat.S_IMODE(p.stat().st_mode) for p in learning_dir.rglob("*") if p in before}
    assert after == before
