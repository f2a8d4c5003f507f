import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

import lorelab.cli.main
import lorelab.evaluation.context._run
import lorelab.evaluation.context._score
from lorelab.cli.main import app
from lorelab.evaluation.context import evaluate_fixtures, source_tree
from lorelab.evaluation.context._receipt import git_dirty, git_revision
from lorelab.evaluation.context._run import package_tree
from tests.support.context_traces import ans, cmd, passing_trace

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "context"
REPO = Path(__file__).resolve().parents[3]


def run(*args: str):
    return CliRunner().invoke(app, ["eval", "context", "run", *map(str, args)])


def receipt(out: Path) -> dict:
    return json.loads((out / "context-receipt.json").read_text())


def test_passing_fixtures_exit_0_and_write_private_receipts(write_fixture, tmp_path):
    out = tmp_path / "out"
    result = run(write_fixture(passing_trace()), "--output", out)
    assert result.exit_code == 0, result.output
    assert "PASS fx [label PASS]" in result.output
    assert stat.S_IMODE(out.stat().st_mode) == 0o700
    for name in ("context-receipt.json", "context-receipt.md"):
        assert stat.S_IMODE((out / name).stat().st_mode) == 0o600
    data = receipt(out)
    assert data["exitCode"] == 0
    assert data["mode"] == "fixture"
    assert data["summary"]["passes"] == 1


def test_a_failing_fixture_exits_1_with_every_count_and_the_verdict(write_fixture, tmp_path):
    trace = [*passing_trace()[:4], cmd(4, "make test", 2), ans(5, [("port", "1", [1])])]
    out = tmp_path / "out"
    result = run(write_fixture(trace, label="FAIL"), "--output", out)
    assert result.exit_code == 1
    record = receipt(out)["records"][0]
    assert record["verdict"] == "FAIL"
    assert record["label"] == "FAIL"
    assert record["labelAgrees"] is True
    assert record["failures"] == {
        "missingFacts": 0,
        "wrongFacts": 1,
        "unsupportedClaims": 0,
        "forbiddenRetries": 1,
        "missingBoundaries": 0,
        "incompleteRecord": 0,
    }


def test_a_passing_fixture_labelled_fail_is_reported_as_a_disagreement_and_exits_1(
    write_fixture, tmp_path
):
    out = tmp_path / "out"
    result = run(write_fixture(passing_trace(), label="FAIL"), "--output", out)
    assert result.exit_code == 1
    assert "DISAGREES with its label" in result.output
    assert receipt(out)["summary"]["labelDisagreements"] == 1


def test_receipts_record_digest_provenance_usage_and_the_synthetic_flag(write_fixture, tmp_path):
    usage = {"inputTokens": 10, "outputTokens": None, "costUSD": None, "wallMs": 7}
    path = write_fixture(passing_trace(), usage=usage, synthetic=True)
    out = tmp_path / "out"
    run(path, "--output", out)
    record = receipt(out)["records"][0]
    assert record["fixtureDigest"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert record["provenance"] == {
        "sourceRevision": "rev-1",
        "runId": "run-1",
        "model": "model-a",
        "synthetic": True,
        "agent": None,
        "agentVersion": None,
        "sessionId": None,
        "cwd": None,
        "sourceDigests": [],
        "unknownEventTypes": {},
    }
    assert record["usage"] == usage
    assert record["synthetic"] is True
    totals = receipt(out)["summary"]["usageTotals"]
    assert totals == {"inputTokens": 10, "outputTokens": None, "costUSD": None, "wallMs": 7}


def test_receipts_record_the_evaluator_revision_and_hashes_of_loaded_modules(
    write_fixture, tmp_path
):
    out = tmp_path / "out"
    run(write_fixture(passing_trace()), "--output", out)
    evaluator = receipt(out)["evaluator"]
    hashes = evaluator["moduleHashes"]
    assert evaluator["entryPoint"] == "lorelab.cli._entry"
    for module in (lorelab.cli.main, lorelab.evaluation.context._score):
        assert (
            hashes[module.__name__]
            == hashlib.sha256(Path(module.__file__).read_bytes()).hexdigest()
        )
    assert "lorelab.context._store" in hashes
    assert evaluator["lorelabVersion"] == lorelab.__version__
    revision = evaluator["gitRevision"]
    assert revision is None or len(revision) == 40
    # Dirtiness is known exactly when the revision is (a checkout): never a guess.
    assert (evaluator["gitDirty"] is None) == (revision is None)


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), *args],
        check=True,
        capture_output=True,
        env={
            **os.environ,
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@example.invalid",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@example.invalid",
        },
    )


def test_git_dirty_is_true_only_for_uncommitted_changes_to_tracked_files(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    assert git_dirty(repo) is None  # not a checkout: unknown
    _git(repo, "init", "-q")
    (repo / "module.py").write_text("x = 1\n")
    _git(repo, "add", "module.py")
    _git(repo, "commit", "-q", "-m", "one")
    assert git_revision(repo) is not None
    assert git_dirty(repo) is False
    (repo / "untracked.py").write_text("y = 2\n")
    assert git_dirty(repo) is False
    (repo / "module.py").write_text("x = 2\n")
    assert git_dirty(repo) is True
    _git(repo, "add", "module.py")
    assert git_dirty(repo) is True  # staged but not committed


def test_the_markdown_receipt_says_whether_the_checkout_had_uncommitted_changes(
    write_fixture, tmp_path
):
    out = tmp_path / "out"
    run(write_fixture(passing_trace()), "--output", out)
    dirty = receipt(out)["evaluator"]["gitDirty"]
    expected = {None: "unknown", True: "yes", False: "no"}[dirty]
    assert f"(uncommitted changes: {expected})" in (out / "context-receipt.md").read_text()


def test_usage_totals_of_large_valid_usage_stay_exact_and_finite(write_fixture, tmp_path):
    usage = {"inputTokens": 10**12, "outputTokens": 1, "costUSD": 1e9, "wallMs": 10**12}
    first = write_fixture(passing_trace(), name="a.json", fixture_id="a", usage=usage)
    second = write_fixture(passing_trace(), name="b.json", fixture_id="b", usage=usage)
    out = tmp_path / "out"
    assert run(first, second, "--output", out).exit_code == 0
    totals = receipt(out)["summary"]["usageTotals"]
    assert totals == {
        "inputTokens": 2 * 10**12,
        "outputTokens": 2,
        "costUSD": 2e9,
        "wallMs": 2 * 10**12,
    }


def test_two_fixtures_costing_1e308_are_refused_and_leave_no_output(write_fixture, tmp_path):
    usage = {"inputTokens": 1, "outputTokens": 1, "costUSD": 1e308, "wallMs": 1}
    first = write_fixture(passing_trace(), name="a.json", fixture_id="a", usage=usage)
    second = write_fixture(passing_trace(), name="b.json", fixture_id="b", usage=usage)
    out = tmp_path / "out"
    result = run(first, second, "--output", out)
    assert result.exit_code == 2
    assert "a.json: usage.costUSD" in result.output
    assert "Traceback" not in result.output
    assert not out.exists()


def test_a_receipt_that_cannot_be_rendered_leaves_no_output_directory(
    write_fixture, tmp_path, monkeypatch
):
    def broken(_receipt: object) -> str:
        raise ValueError("rendering failed")

    monkeypatch.setattr(lorelab.evaluation.context._run, "render_markdown", broken)
    out = tmp_path / "out"
    with pytest.raises(ValueError, match="rendering failed"):
        evaluate_fixtures([write_fixture(passing_trace())], output=out)
    assert not out.exists()


def test_receipts_hold_metrics_only_never_answer_text(write_fixture, tmp_path):
    trace = passing_trace()
    trace[-1] = ans(5, [("port", "SECRET-ANSWER-VALUE", [1])], [("SECRET-CLAIM-TEXT", [4])])
    out = tmp_path / "out"
    run(write_fixture(trace), "--output", out)
    for name in ("context-receipt.json", "context-receipt.md"):
        text = (out / name).read_text()
        assert "SECRET-ANSWER-VALUE" not in text
        assert "SECRET-CLAIM-TEXT" not in text


def test_bad_input_exits_2_and_creates_nothing(tmp_path):
    bad = tmp_path / "fixtures" / "bad.json"
    bad.parent.mkdir()
    bad.write_text('{"schemaVersion": 1}')
    out = tmp_path / "out"
    result = run(bad, "--output", out)
    assert result.exit_code == 2
    assert "bad.json" in result.output
    assert "Traceback" not in result.output
    assert not out.exists()


def test_two_fixtures_with_one_id_are_refused(write_fixture, tmp_path):
    first = write_fixture(passing_trace(), name="a.json")
    second = write_fixture(passing_trace(), name="b.json")
    result = run(first, second, "--output", tmp_path / "out")
    assert result.exit_code == 2
    assert "same id 'fx'" in result.output


def test_output_inside_a_fixture_directory_or_the_lorelab_package_is_refused(
    write_fixture, tmp_path
):
    path = write_fixture(passing_trace())
    inside_fixtures = run(path, "--output", path.parent / "nested" / "out")
    assert inside_fixtures.exit_code == 2
    assert "inside the directory of fixture" in inside_fixtures.output
    # The running package: the code the receipt's module hashes bind.
    never = package_tree() / "build-receipts-never-created"
    inside_package = run(path, "--output", never)
    assert inside_package.exit_code == 2
    assert "inside the lorelab package" in inside_package.output
    assert not never.exists()


def test_output_through_a_symlink_into_the_lorelab_package_is_refused(write_fixture, tmp_path):
    link = tmp_path / "link"
    link.symlink_to(package_tree())
    name = "receipts-through-a-link-never-created"
    result = run(write_fixture(passing_trace()), "--output", link / name)
    assert result.exit_code == 2
    assert "lorelab package" in result.output
    assert not (package_tree() / name).exists()


def test_output_in_a_checkout_outside_the_package_is_accepted(tmp_path):
    # A fresh clone: `--output out/context` next to src/, as the README writes it.
    if source_tree() == package_tree():
        pytest.skip("lorelab runs from an installed package, not a checkout")
    fixture = source_tree() / "examples" / "context" / "pass-compaction-test-database.json"
    top = source_tree() / f".ctx-test-{uuid.uuid4().hex}"
    out = top / "context"
    try:
        result = run(fixture, "--output", out)
        assert result.exit_code == 0, result.output
        assert (out / "context-receipt.json").is_file()
    finally:
        shutil.rmtree(top, ignore_errors=True)


def test_a_directory_given_as_a_fixture_gets_one_line(tmp_path):
    folder = tmp_path / "fixtures"
    folder.mkdir()
    result = run(folder, "--output", tmp_path / "out")
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        f"lorelab: error: {folder}: is a directory, expected a regular file"
    ]


def test_an_existing_output_directory_is_refused(write_fixture, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    result = run(write_fixture(passing_trace()), "--output", out)
    assert result.exit_code == 2
    assert "already exists" in result.output


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--agent", "x"], "--agent"),
        (["--max-turns", "2", "--boundary", "restart"], "--boundary, --max-turns"),
        (["--timeout-ms", "100"], "--timeout-ms"),
    ],
)
def test_trial_options_without_trials_are_usage_errors(write_fixture, tmp_path, flags, named):
    result = run(write_fixture(passing_trace()), "--output", tmp_path / "o", *flags)
    assert result.exit_code == 2
    assert f"{named} only apply with --trials" in result.output
    assert not (tmp_path / "o").exists()


def test_schema_prints_the_fixture_json_schema():
    result = CliRunner().invoke(app, ["eval", "context", "schema"])
    assert result.exit_code == 0
    schema = json.loads(result.output)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert "expectedFacts" in schema["properties"]
    assert schema["properties"]["schemaVersion"]["const"] == 1


def test_the_old_spelling_without_run_still_scores(write_fixture, tmp_path):
    fixture = write_fixture(passing_trace())
    result = CliRunner().invoke(
        app, ["eval", "context", str(fixture), "--output", str(tmp_path / "out")]
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "context-receipt.json").is_file()


def test_the_installed_program_scores_the_passing_examples_and_exits_0(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    passing = subprocess.run(
        [sys.executable, "-m", "lorelab", "eval", "context", "run",
         *sorted(EXAMPLES.glob("pass-*.json")), "--output", tmp_path / "pass"],
        capture_output=True, text=True, timeout=60, check=False, env=env,
    )  # fmt: skip
    assert passing.returncode == 0, passing.stderr
    records = json.loads((tmp_path / "pass" / "context-receipt.json").read_text())["records"]
    assert {r["verdict"] for r in records} == {"PASS"}


def test_the_failing_examples_exit_1_with_verdicts_that_agree_with_their_labels(tmp_path):
    result = run(*sorted(EXAMPLES.glob("fail-*.json")), "--output", tmp_path / "fail")
    assert result.exit_code == 1
    records = receipt(tmp_path / "fail")["records"]
    assert len(records) >= 4
    assert {r["verdict"] for r in records} == {"FAIL"}
    assert all(r["labelAgrees"] for r in records)


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.json")))
def test_each_example_verdict_agrees_with_its_label(name, tmp_path):
    result = run(EXAMPLES / name, "--output", tmp_path / "out")
    assert result.exit_code == (0 if name.startswith("pass-") else 1)
    assert receipt(tmp_path / "out")["records"][0]["labelAgrees"] is True


def test_an_id_with_a_newline_or_pipe_stays_in_its_markdown_table_row(write_fixture, tmp_path):
    out = tmp_path / "out"
    run(write_fixture(passing_trace(), name="a.json", fixture_id="odd\nid|x"), "--output", out)
    rows = [line for line in (out / "context-receipt.md").read_text().splitlines() if "odd" in line]
    assert len(rows) == 1
    assert rows[0].startswith("| odd id\\|x | PASS |")


def test_the_receipt_reports_forbidden_history_apart_from_retries(write_fixture, tmp_path):
    # passing_trace fails `make test` once before the compaction: history, not a retry.
    out = tmp_path / "out"
    result = run(write_fixture(passing_trace()), "--output", out)
    assert result.exit_code == 0, result.output
    record = receipt(out)["records"][0]
    assert record["forbiddenHistory"] == 1
    assert record["failures"]["forbiddenRetries"] == 0
    assert "forbidden in history (not failures)" in (out / "context-receipt.md").read_text()


def test_an_empty_output_path_is_refused_by_name(write_fixture, tmp_path):
    result = run(write_fixture(passing_trace()), "--output", "")
    assert result.exit_code == 2
    assert "--output: an empty path" in result.output
