"""The SDK's own stdio client starts ``python -m lorelab mcp`` and drives every tool."""

import json
import sys
from pathlib import Path
from typing import Any

import anyio
from click.testing import CliRunner
from mcp.client.stdio import StdioServerParameters

from lorelab.cli.main import app
from lorelab.memory import SqliteMemoryStore
from mcp import Client

PY = sys.executable
TOOLS = {
    "lore_record",
    "lore_prepare",
    "lore_promote_skill",
    "lore_start",
    "lore_report_outcome",
    "lore_skill_health",
    "lore_dream",
    "lore_check_candidate",
    "lore_promote_candidate",
    "lore_list",
    "lore_show",
    "lore_checkpoint",
    "lore_recover",
}


def _server(home: Path, project: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=PY,
        args=["-m", "lorelab", "mcp", "--home", str(home), "--project", str(project)],
    )


def _experience(task: str) -> dict[str, Any]:
    return {
        "task": task,
        "summary": "Generated the fixture file and checked it parses.",
        "outcome": "passed",
        "verification": {
            "command": f'{PY} -c \'assert open("out.txt").read() == "ok"\'',
            "exit_code": 0,
        },
        "commands": [
            {"command": f'{PY} -c \'open("out.txt", "w").write("ok")\'', "exit_code": 0},
            {"command": "make fixtures-legacy", "exit_code": 2},
        ],
        "qa": "approved",
        "project": "data-pipeline",
    }


FIRST = "Regenerate the parquet fixtures after the orders schema change"
SECOND = "Parquet fixtures regeneration for the orders schema"


async def _call(client: Client, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(name, arguments, read_timeout_seconds=60)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    # The text content carries the same JSON as the structured content.
    assert json.loads(result.content[0].text) == result.structured_content  # type: ignore[union-attr]
    return result.structured_content


def test_the_server_lists_every_tool_with_real_schemas_and_serves_each_one(tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()

    async def main() -> None:
        async with Client(_server(home, project), read_timeout_seconds=60) as client:
            listed = await client.list_tools()
            tools = {tool.name: tool for tool in listed.tools}
            assert set(tools) == TOOLS
            record = tools["lore_record"].input_schema
            assert set(record["required"]) == {"task", "summary", "outcome", "verification"}
            assert record["additionalProperties"] is False
            assert "exit_code" in json.dumps(record)
            assert tools["lore_prepare"].input_schema["properties"]["budget_tokens"]["default"] == (
                1200
            )
            for tool in listed.tools:
                assert tool.input_schema["type"] == "object"
                assert tool.output_schema is not None, tool.name
                assert tool.description

            first = await _call(client, "lore_record", _experience(FIRST))
            second = await _call(client, "lore_record", _experience(SECOND))
            assert (first["id"], second["id"], first["verified"]) == ("exp-1", "exp-2", True)

            brief = await _call(
                client, "lore_prepare", {"task": "regenerate parquet fixtures for orders"}
            )
            assert not brief["empty"]
            assert {item["id"] for item in brief["experiences"]} == {"exp-1", "exp-2"}
            assert brief["avoid_commands"][0]["command"] == "make fixtures-legacy"

            dream = await _call(client, "lore_dream", {})
            [candidate] = dream["candidates"]
            run = await _call(client, "lore_check_candidate", {"candidate_id": candidate["id"]})
            assert run["passed"] is True
            assert not (project / "out.txt").exists()
            dreamed = await _call(
                client,
                "lore_promote_candidate",
                {"candidate_id": candidate["id"], "name": "parquet-fixtures"},
            )
            assert dreamed["origin"] == "dream"

            skill = await _call(
                client,
                "lore_promote_skill",
                {
                    "experience_ids": ["exp-1", "exp-2"],
                    "name": "orders-fixtures",
                    "description": "Regenerate and check the orders parquet fixtures.",
                },
            )
            assert skill["state"] == "trusted"

            plan = await _call(
                client, "lore_start", {"task": "regenerate the orders parquet fixtures"}
            )
            assert plan["plan_id"] == "plan-1"
            outcome = await _call(
                client,
                "lore_report_outcome",
                {"plan_id": plan["plan_id"], "passed": True, "rework_count": 0},
            )
            assert outcome["health"] == 3
            health = await _call(client, "lore_skill_health", {"skill_id": plan["skill_id"]})
            assert health["skills"][0]["successes"] == 1

            listed_items = await _call(client, "lore_list", {"kind": "skill"})
            assert listed_items["total"] == 2
            shown = await _call(client, "lore_show", {"id": "exp-1"})
            assert shown["item"]["provenance"]["verification"]["exit_code"] == 0

            saved = await _call(
                client,
                "lore_checkpoint",
                {
                    "scope": "task-17",
                    "boundary": "compaction",
                    "summary": "Fixtures regenerated; orders schema v3.",
                    "failed_commands": [{"command": "make fixtures-legacy", "exit_code": 2}],
                },
            )
            recovered = await _call(client, "lore_recover", {"scope": "task-17"})
            assert recovered["found"] is True
            assert recovered["checkpoint"]["id"] == saved["checkpoint_id"]
            assert "make fixtures-legacy" in recovered["handoff_brief"]
            missing = await _call(client, "lore_recover", {"scope": "never"})
            assert missing == {"found": False, "checkpoint": None, "handoff_brief": None}

    anyio.run(main)


def test_tool_errors_are_error_results_and_the_server_keeps_serving(tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    with SqliteMemoryStore(home / "memory.db") as store:
        store.set_evaluation_lock("cond-3", [FIRST])

    async def main() -> None:
        async with Client(_server(home, project), read_timeout_seconds=60) as client:
            cases = [
                ("lore_record", _experience(FIRST), "holdout task of active evaluation lock"),
                (
                    "lore_report_outcome",
                    {"plan_id": "plan-8", "passed": True, "rework_count": 0},
                    "plan plan-8 does not exist",
                ),
                ("lore_record", {**_experience(SECOND), "surprise": 1}, "surprise"),
                ("lore_prepare", {"task": "x", "budget_tokens": 1}, "budget_tokens"),
                (
                    "lore_promote_skill",
                    {"experience_ids": ["exp-1", "exp-1"], "name": "a-b", "description": "d"},
                    "more than once",
                ),
                ("lore_show", {"id": "cand-1"}, "does not exist"),
                (
                    "lore_checkpoint",
                    {
                        "scope": "task-1",
                        "boundary": "restart",
                        "summary": "s",
                        "failed_commands": [{"command": "make", "exit_code": 0}],
                    },
                    "nonzero exit code",
                ),
                ("lore_nope", {}, "Unknown tool"),
            ]
            for name, arguments, message in cases:
                result = await client.call_tool(name, arguments, read_timeout_seconds=60)
                assert result.is_error, name
                assert message in result.content[0].text, (name, result.content)  # type: ignore[union-attr]
            still = await _call(client, "lore_record", _experience(SECOND))
            assert still["id"] == "exp-1"

    anyio.run(main)


def _normalise(value: Any) -> Any:
    """Drop wall-clock fields, the only thing two identical runs may differ in."""
    if isinstance(value, dict):
        return {
            key: _normalise(item)
            for key, item in value.items()
            if key not in ("created_at", "reported_at", "duration_ms")
        }
    if isinstance(value, list):
        return [_normalise(item) for item in value]
    return value


def test_the_cli_and_mcp_give_the_same_results_for_the_same_calls(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    runner = CliRunner()
    cli_home = tmp_path / "cli-home"

    def cli(*args: str, stdin: str | None = None) -> Any:
        result = runner.invoke(
            app, ["memory", "--home", str(cli_home), *args, "--json"], input=stdin
        )
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    cli_results = [
        cli("record", "--input", "-", stdin=json.dumps(_experience(FIRST))),
        cli("record", "--input", "-", stdin=json.dumps(_experience(SECOND))),
        cli("prepare", "regenerate parquet fixtures for orders", "--budget-tokens", "600"),
        cli("prepare", "Add a dark mode toggle to the settings page"),
        cli("promote", "exp-1", "exp-2", "--name", "orders-fixtures", "--description", "Fixtures."),
        cli("start", "regenerate the orders parquet fixtures"),
        cli("outcome", "plan-1", "--failed", "--rework-count", "2"),
        cli("health"),
        cli("dream"),
        cli("list", "--kind", "experience"),
        cli("show", "exp-2"),
    ]

    async def main() -> list[Any]:
        home = tmp_path / "mcp-home"
        async with Client(_server(home, project), read_timeout_seconds=60) as client:
            return [
                await _call(client, "lore_record", _experience(FIRST)),
                await _call(client, "lore_record", _experience(SECOND)),
                await _call(
                    client,
                    "lore_prepare",
                    {"task": "regenerate parquet fixtures for orders", "budget_tokens": 600},
                ),
                await _call(
                    client, "lore_prepare", {"task": "Add a dark mode toggle to the settings page"}
                ),
                await _call(
                    client,
                    "lore_promote_skill",
                    {
                        "experience_ids": ["exp-1", "exp-2"],
                        "name": "orders-fixtures",
                        "description": "Fixtures.",
                    },
                ),
                await _call(
                    client, "lore_start", {"task": "regenerate the orders parquet fixtures"}
                ),
                await _call(
                    client,
                    "lore_report_outcome",
                    {"plan_id": "plan-1", "passed": False, "rework_count": 2},
                ),
                await _call(client, "lore_skill_health", {}),
                await _call(client, "lore_dream", {}),
                await _call(client, "lore_list", {"kind": "experience"}),
                (await _call(client, "lore_show", {"id": "exp-2"}))["item"],
            ]

    mcp_results = anyio.run(main)
    assert len(cli_results) == len(mcp_results)
    for number, (from_cli, from_mcp) in enumerate(zip(cli_results, mcp_results, strict=True)):
        assert _normalise(from_cli) == _normalise(from_mcp), number
