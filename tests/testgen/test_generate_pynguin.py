"""TestLore with a real, non-LLM author: Pynguin 0.48 in its own virtual environment."""

import json
import textwrap

import pytest
from click.testing import CliRunner

from lorelab.cli.main import app
from lorelab.workers import adapter_argv

MODULE = textwrap.dedent(
    """
    def bucket(score: int) -> str:
        if score < 0:
            return "invalid"
        if score < 50:
            return "low"
        if score < 80:
            return "mid"
        return "high"
    """
).lstrip()


@pytest.mark.slow
def test_pynguin_authors_tests_that_pass_validation_and_are_applied(
    tmp_path, pynguin_executable, monkeypatch
):
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "bucket.py").write_text(MODULE)
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("Sort a score into invalid, low, mid or high buckets.\n")
    monkeypatch.setenv("PYNGUIN_DANGER_AWARE", "1")
    agent = [
        *adapter_argv("pynguin"),
        "--search-seconds",
        "5",
        "--pynguin",
        str(pynguin_executable),
    ]
    result = CliRunner().invoke(
        app,
        [
            "tests",
            "generate",
            str(project),
            "--requirements",
            str(requirements),
            "--source",
            "src/bucket.py",
            "--agent",
            json.dumps(agent),
            "--reviewer-agent",
            "fixture",
            "--no-memory",
            "--stability-runs",
            "2",
            "--keep-passing",
            "--json",
        ],
    )
    record = json.loads(result.stdout)
    assert result.exit_code == 0, (record["generation"]["reason"], record.get("validation"))
    assert record["reviewerAgent"] == adapter_argv("fixture")
    assert [r["role"] for r in record["generation"]["roles"]] == ["architect", "author", "reviewer"]
    written = (project / "tests" / "test_bucket.py").read_text()
    assert "bucket" in written
    assert any(case["status"] == "passed" for case in record["validation"]["cases"])
