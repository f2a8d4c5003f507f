"""lorelab eval conditions leaderboard: runs that differ in the memory alone, side by side."""

import json
from pathlib import Path

from click.testing import CliRunner

from lorelab.cli.main import app
from tests.support.conditions import run_record

EXAMPLE = Path(__file__).parents[3] / "examples" / "conditions" / "conditions.json"


def _run_dir(base: Path, memory: str, *, helped: bool, tokens: int, seed_sha="a" * 64) -> Path:
    """A finished run directory as the runner writes it (the receipts the board reads)."""
    manifest = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    directory = base / memory
    (directory / "runs").mkdir(parents=True)
    conditions = ["baseline", "memory_guided"]
    runs = []
    for task in manifest["tasks"]:
        for condition in conditions:
            passed = condition == "memory_guided" and helped and task["holdout"]
            record = run_record(task["id"], condition, passed, tokens=tokens)
            record["holdout"] = task["holdout"]
            runs.append(record)
            served = [f"{memory}-{i}" for i in range(3 if condition != "baseline" else 0)]
            (directory / "runs" / f"{task['id']}--{condition}.json").write_text(
                json.dumps({"guidance": {"servedIds": served}}), encoding="utf-8"
            )
    not_applicable = {"skill_planned": "no plans", "dreaming": "no Dream"}
    (directory / "beta2_runs.json").write_text(
        json.dumps(
            {"runs": runs, "manifest_sha256": "b" * 64, "conditions_not_applicable": not_applicable}
        ),
        encoding="utf-8",
    )
    (directory / "manifest.json").write_text(
        json.dumps({"sha256": "b" * 64, "manifest": manifest}), encoding="utf-8"
    )
    (directory / "run.json").write_text("{}", encoding="utf-8")
    preflight = {
        "manifestSha256": "b" * 64,
        "project": {"sha256": "c" * 64},
        "host": {"argv": ["host"], "model": {"declared": None}, "evidenceKind": "protocol-fixture"},
        "seedFile": {"sha256": seed_sha},
        "lorelabVersion": "1.0",
        "memory": {"profile": memory, "serverInfo": {"name": memory, "version": "9"}},
    }
    (directory / "preflight.json").write_text(json.dumps(preflight), encoding="utf-8")
    calls = [{"operation": "prepare", "seconds": s} for s in (0.1, 0.2, 0.3, 0.4)]
    calls.append({"operation": "record", "seconds": 0.05})
    (directory / "memory-calls.json").write_text(json.dumps({"calls": calls}), encoding="utf-8")
    return directory


def test_the_board_ranks_memories_and_shows_every_column(tmp_path):
    good = _run_dir(tmp_path, "good", helped=True, tokens=50)
    idle = _run_dir(tmp_path, "idle", helped=False, tokens=400)
    out = tmp_path / "board"
    result = CliRunner().invoke(
        app, ["eval", "conditions", "leaderboard", str(idle), str(good), "--output", str(out)]
    )
    assert result.exit_code == 0, result.output
    board = json.loads((out / "leaderboard.json").read_text(encoding="utf-8"))
    assert board["label"] == "protocol-fixture"
    first, second = board["rows"]
    assert (first["memory"], second["memory"]) == ("good", "idle")
    assert first["passRateDelta"] == 1.0
    assert first["signTest"]["positive"] == first["holdouts"]
    assert second["passRateDelta"] == 0.0
    assert first["guidanceTokensPerTask"] == 50.0
    assert first["itemsServedPerTask"] == 3.0
    assert first["prepareLatency"] == {"calls": 4, "p50S": 0.2, "p95S": 0.4}
    assert first["recordLatency"]["p95S"] == 0.05
    assert set(first["conditionsNotApplicable"]) == {"skill_planned", "dreaming"}
    assert first["decision"]["condition"] == "memory_guided"
    page = CliRunner().invoke(app, ["report", str(out)])
    assert page.exit_code == 0, page.output
    html = (out / "report.html").read_text(encoding="utf-8")
    assert 'data-table="leaderboard"' in html
    assert html.index(">good<") < html.index(">idle<")


def test_runs_with_different_seed_files_are_refused_naming_the_field(tmp_path):
    one = _run_dir(tmp_path, "one", helped=True, tokens=50)
    other = _run_dir(tmp_path, "other", helped=True, tokens=50, seed_sha="d" * 64)
    result = CliRunner().invoke(
        app,
        [
            "eval",
            "conditions",
            "leaderboard",
            str(one),
            str(other),
            "--output",
            str(tmp_path / "b"),
        ],
    )
    assert result.exit_code == 2
    assert "seed file sha256" in result.output
    assert not (tmp_path / "b").exists()
