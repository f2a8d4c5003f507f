"""The SDK's own clients drive every tool: over stdio (``python -m lorelab mcp``) and over
streamable HTTP (``python -m lorelab serve``, with an admin token): one suite, both servers."""

import contextlib
import json
import re
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from mcp.client.stdio import StdioServerParameters

from lorelab.cli.main import app
from lorelab.memory import LockRequest, SqliteMemoryStore
from mcp import Client
from tests.support.serve import http_client, running_server

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
    "lore_explain",
    "lore_update_validity",
    "lore_feedback",
}


def _server(home: Path, project: Path, *, allow_checks: bool | str = True) -> StdioServerParameters:
    # The operator's consent to candidate checks over MCP, as a registration would give it:
    # the environment variable (True) or the --allow-checks flag ("flag").
    args = ["-m", "lorelab", "mcp", "--home", str(home), "--project", str(project)]
    if allow_checks == "flag":
        args.append("--allow-checks")
    return StdioServerParameters(
        command=PY,
        args=args,
        env={"LORELAB_MCP_ALLOW_CHECKS": "1"} if allow_checks is True else None,
    )


@pytest.fixture(params=["stdio", "http"])
def transport(request: pytest.FixtureRequest) -> str:
    """Which server the suite drives: ``lorelab mcp`` (stdio) or ``lorelab serve`` (HTTP)."""
    return str(request.param)


@contextlib.asynccontextmanager
async def _connect(
    transport: str, home: Path, project: Path, *, allow_checks: bool | str = True
) -> AsyncIterator[Client]:
    """A client of a new server for ``home``, over ``transport``."""
    if transport == "stdio":
        async with Client(
            _server(home, project, allow_checks=allow_checks), read_timeout_seconds=60
        ) as client:
            yield client
        return
    args = ["--allow-checks"] if allow_checks == "flag" else []
    env = {"LORELAB_MCP_ALLOW_CHECKS": "1" if allow_checks is True else "0"}
    with running_server(home, project, args=args, env=env) as server:
        async with http_client(server.mcp_url, server.token) as client:
            yield client


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


def test_the_server_lists_every_tool_with_real_schemas_and_serves_each_one(tmp_path, transport):
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()

    async def main() -> None:
        async with _connect(transport, home, project) as client:
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
            # Graded: two rival near-repeats leave little margin, so the best is served as
            # related (context) and gives no commands to avoid; a match would give them.
            served_ids = {item["id"] for item in brief["experiences"]}
            assert served_ids <= {"exp-1", "exp-2"}
            tiers = {item["tier"] for item in brief["experiences"]}
            best = brief["experiences"][0]["id"]
            other = ({"exp-1", "exp-2"} - {best}).pop()
            assert tiers <= {"match", "related"}
            if "match" in tiers:
                assert brief["avoid_commands"][0]["command"] == "make fixtures-legacy"
            else:
                assert brief["avoid_commands"] == []

            explained = await _call(
                client, "lore_explain", {"task": "regenerate parquet fixtures for orders"}
            )
            assert explained["mode"] == "hybrid"
            assert {c["id"] for c in explained["candidates"] if c["served"]} == served_ids
            for candidate in explained["candidates"]:
                assert {"lexical", "semantic", "fused", "confidence", "tier", "reason"} <= set(
                    candidate
                )
            rated = await _call(
                client,
                "lore_feedback",
                {"experience_id": best, "rating": "helpful", "brief_id": brief["brief_id"]},
            )
            assert rated["counts"]["helpful"] == 1
            marked = await _call(
                client,
                "lore_update_validity",
                {"item_id": other, "state": "contradicted", "reason": "schema reverted"},
            )
            assert (marked["state_before"], marked["state"]) == ("trusted", "contradicted")
            narrowed = await _call(
                client, "lore_prepare", {"task": "regenerate parquet fixtures for orders"}
            )
            assert [item["id"] for item in narrowed["experiences"]] == [best]
            shown = await _call(client, "lore_show", {"id": other})
            assert shown["item"]["validity_reason"] == "schema reverted"
            await _call(client, "lore_update_validity", {"item_id": other, "state": "trusted"})

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

            # The same procedure is never a second Skill under another name.
            again = await client.call_tool(
                "lore_promote_skill",
                {
                    "experience_ids": ["exp-1", "exp-2"],
                    "name": "orders-fixtures",
                    "description": "Regenerate and check the orders parquet fixtures.",
                },
            )
            assert again.is_error
            assert "skill-1 (parquet-fixtures) already holds this procedure" in str(again.content)

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
            assert listed_items["total"] == 1
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


def test_tool_errors_are_error_results_and_the_server_keeps_serving(tmp_path, transport):
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    with SqliteMemoryStore(home / "memory.db") as store:
        store.set_evaluation_lock(LockRequest(evaluation_id="cond-3", holdout_tasks=[FIRST]))

    async def main() -> None:
        async with _connect(transport, home, project) as client:
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


_CLOCK_KEYS = ("created_at", "createdAt", "reported_at", "duration_ms")
_CLOCK_TEXT = re.compile(r"ckpt-[0-9TZ]+-[0-9a-f]+|\d{4}-\d\d-\d\dT[0-9:.+Z-]+")


def _normalise(value: Any) -> Any:
    """Drop wall-clock fields and ids made from the clock, the only things two runs differ in."""
    if isinstance(value, dict):
        return {key: _normalise(item) for key, item in value.items() if key not in _CLOCK_KEYS}
    if isinstance(value, list):
        return [_normalise(item) for item in value]
    if isinstance(value, str):
        return _CLOCK_TEXT.sub("<clock>", value)
    return value


def _other_experience(task: str) -> dict[str, Any]:
    """An experience with a procedure of its own, so that a Dream finds it as a candidate."""
    return {
        "task": task,
        "summary": "Wrote the seed file and checked it.",
        "outcome": "passed",
        "verification": {
            "command": f'{PY} -c \'assert open("seed.txt").read() == "s"\'',
            "exit_code": 0,
        },
        "commands": [{"command": f'{PY} -c \'open("seed.txt", "w").write("s")\'', "exit_code": 0}],
        "qa": "approved",
    }


CHECKPOINT = {
    "scope": "task-17",
    "boundary": "compaction",
    "summary": "Fixtures regenerated; DB_PASSWORD=hunter2secret in the env.",
    "notes": ["orders schema v3"],
    "failed_commands": [{"command": "make fixtures-legacy", "exit_code": 2}],
}


def test_the_cli_and_mcp_give_the_same_results_for_the_same_calls(tmp_path, transport):
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
        cli(
            "skills",
            "promote",
            "exp-1",
            "exp-2",
            "--name",
            "orders-fixtures",
            "--description",
            "Fixtures.",
        ),
        cli("start", "regenerate the orders parquet fixtures"),
        cli("outcome", "plan-1", "--failed", "--rework-count", "2"),
        cli("skills", "health"),
        cli("dream"),
        cli("list", "--kind", "experience"),
        cli("show", "exp-2"),
        cli("record", "--input", "-", stdin=json.dumps(_other_experience("Seed the dev database"))),
        cli("record", "--input", "-", stdin=json.dumps(_other_experience("Dev database seeding"))),
        cli("dream"),
        cli("candidates", "check", "cand-1", "--dir", str(project)),
        cli("candidates", "promote", "cand-1", "--name", "seed-dev-db"),
        cli("checkpoint", "--input", "-", stdin=json.dumps(CHECKPOINT)),
        cli("recover", "task-17"),
        cli("recover", "never"),
    ]

    async def main() -> list[Any]:
        home = tmp_path / "mcp-home"
        async with _connect(transport, home, project) as client:
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
                await _call(client, "lore_record", _other_experience("Seed the dev database")),
                await _call(client, "lore_record", _other_experience("Dev database seeding")),
                await _call(client, "lore_dream", {}),
                await _call(client, "lore_check_candidate", {"candidate_id": "cand-1"}),
                await _call(
                    client,
                    "lore_promote_candidate",
                    {"candidate_id": "cand-1", "name": "seed-dev-db"},
                ),
                await _call(client, "lore_checkpoint", CHECKPOINT),
                await _call(client, "lore_recover", {"scope": "task-17"}),
                await _call(client, "lore_recover", {"scope": "never"}),
            ]

    mcp_results = anyio.run(main)
    assert len(cli_results) == len(mcp_results)
    # The one difference: over HTTP each experience names the token that recorded it.
    recorded_by = {"stdio": None, "http": "test-client"}[transport]
    assert '"recorded_by": null' in json.dumps(cli_results[10])
    assert f'"recorded_by": {json.dumps(recorded_by)}' in json.dumps(mcp_results[10])
    for number, (from_cli, from_mcp) in enumerate(zip(cli_results, mcp_results, strict=True)):
        text = json.dumps(from_mcp).replace(
            f'"recorded_by": "{recorded_by}"', '"recorded_by": null'
        )
        assert _normalise(from_cli) == _normalise(json.loads(text)), number
    # The calls did what they say, so the comparison above compared real work.
    assert [c["name"] for c in cli_results[13]["candidates"]] == ["database-dev-seed"]
    assert cli_results[14]["passed"] is True
    assert cli_results[15]["origin"] == "dream"
    assert cli_results[16]["redactions"] == {"secret_assignment": 1}
    assert cli_results[17]["found"] is True
    assert "hunter2secret" not in json.dumps(cli_results[17])
    assert cli_results[18] == {"found": False, "checkpoint": None, "handoff_brief": None}


# Bad calls of every kind: (CLI arguments, CLI stdin, tool, tool arguments).
_BAD_CALLS: list[tuple[tuple[str, ...], str | None, str, dict[str, Any]]] = [
    (
        ("record", "--input", "-"),
        json.dumps({**_experience(SECOND), "verification": {"command": "t", "exit_code": "0"}}),
        "lore_record",
        {**_experience(SECOND), "verification": {"command": "t", "exit_code": "0"}},
    ),
    (
        ("record", "--input", "-"),
        json.dumps({**_experience(SECOND), "verification": {"command": "t", "exit_code": True}}),
        "lore_record",
        {**_experience(SECOND), "verification": {"command": "t", "exit_code": True}},
    ),
    (
        ("record", "--input", "-"),
        json.dumps({**_experience(SECOND), "verification": {"command": "t", "exit_code": 10**23}}),
        "lore_record",
        {**_experience(SECOND), "verification": {"command": "t", "exit_code": 10**23}},
    ),
    (
        ("record", "--input", "-"),
        json.dumps({**_experience(SECOND), "surprise": 1}),
        "lore_record",
        {**_experience(SECOND), "surprise": 1},
    ),
    (
        ("prepare", "x", "--budget-tokens", "1"),
        None,
        "lore_prepare",
        {"task": "x", "budget_tokens": 1},
    ),
    (
        ("list", "--limit", "99999999999999999999"),
        None,
        "lore_list",
        {"kind": "experience", "limit": 99999999999999999999},
    ),
    (("show", "exp_1"), None, "lore_show", {"id": "exp_1"}),
    (
        ("outcome", "plan-8", "--passed", "--rework-count", "0"),
        None,
        "lore_report_outcome",
        {"plan_id": "plan-8", "passed": True, "rework_count": 0},
    ),
    (
        ("skills", "promote", "exp-1", "exp-1", "--name", "a-b", "--description", "d"),
        None,
        "lore_promote_skill",
        {"experience_ids": ["exp-1", "exp-1"], "name": "a-b", "description": "d"},
    ),
    (
        ("skills", "promote", "exp-1", "exp-2", "--name", "Bad Name", "--description", "d"),
        None,
        "lore_promote_skill",
        {"experience_ids": ["exp-1", "exp-2"], "name": "Bad Name", "description": "d"},
    ),
    (("candidates", "check", "cand-9"), None, "lore_check_candidate", {"candidate_id": "cand-9"}),
    (
        ("candidates", "check", "cand-9", "--timeout-s", "0"),
        None,
        "lore_check_candidate",
        {"candidate_id": "cand-9", "timeout_seconds": 0},
    ),
    (
        ("candidates", "promote", "cand-9"),
        None,
        "lore_promote_candidate",
        {"candidate_id": "cand-9"},
    ),
    (
        ("checkpoint", "--input", "-"),
        json.dumps({**CHECKPOINT, "failed_commands": [{"command": "make", "exit_code": 0}]}),
        "lore_checkpoint",
        {**CHECKPOINT, "failed_commands": [{"command": "make", "exit_code": 0}]},
    ),
    (
        ("checkpoint", "--input", "-"),
        json.dumps({**CHECKPOINT, "boundary": "lunch"}),
        "lore_checkpoint",
        {**CHECKPOINT, "boundary": "lunch"},
    ),
]
# Where a message names its input: the CLI names the file, stdin or its flags; a tool its
# arguments. What follows is the same.
_SOURCE = re.compile(r"^(?:stdin|arguments|[a-z-]+ (?:arguments|flags)): ")
_FLAG_OF = {
    "budget_tokens": "budget-tokens",
    "limit": "limit",
    "name": "name",
    "timeout_seconds": "timeout-s",
}


def test_a_bad_call_gets_the_same_one_line_message_from_the_cli_and_over_mcp(tmp_path, transport):
    project = tmp_path / "project"
    project.mkdir()
    runner = CliRunner()
    cli_home = tmp_path / "cli-home"
    first = runner.invoke(
        app,
        ["memory", "--home", str(cli_home), "record", "--input", "-"],
        input=json.dumps(_experience(FIRST)),
    )
    assert first.exit_code == 0, first.output
    from_cli = []
    for args, stdin, _, _ in _BAD_CALLS:
        result = runner.invoke(app, ["memory", "--home", str(cli_home), *args], input=stdin)
        assert result.exit_code == 2, (args, result.output)
        [line] = result.stderr.strip().splitlines()
        assert line.startswith("lorelab: error: "), line
        from_cli.append(line.removeprefix("lorelab: error: "))

    async def main() -> list[str]:
        texts = []
        async with _connect(transport, tmp_path / "mcp-home", project) as c:
            await _call(c, "lore_record", _experience(FIRST))
            for _, _, name, arguments in _BAD_CALLS:
                result = await c.call_tool(name, arguments, read_timeout_seconds=60)
                assert result.is_error, name
                text = result.content[0].text  # type: ignore[union-attr]
                assert "\n" not in text, text
                assert text.startswith(f"Error executing tool {name}: "), text
                texts.append(text.removeprefix(f"Error executing tool {name}: "))
        return texts

    from_mcp = anyio.run(main)
    for cli_text, mcp_text in zip(from_cli, from_mcp, strict=True):
        if cli_text.startswith("--"):
            # Made from flags: the CLI names the user's flag and value where the tool names its
            # argument; the problem is the same.
            problem = _SOURCE.sub("", mcp_text).split(": ", 1)[1]
            assert cli_text.startswith(f"--{_FLAG_OF[_SOURCE.sub('', mcp_text).split(':')[0]]} ")
            assert f": {problem}. (see '" in cli_text, (cli_text, mcp_text)
        else:
            assert _SOURCE.sub("", cli_text) == _SOURCE.sub("", mcp_text), (cli_text, mcp_text)
        assert "validation error" not in mcp_text
        assert "pydantic" not in mcp_text


def test_an_object_argument_sent_as_a_json_string_is_still_accepted(tmp_path, transport):
    # Some hosts send objects as JSON strings; the SDK accepted that before the tools
    # validated their own arguments, and still does. A string never becomes a number.
    project = tmp_path / "project"
    project.mkdir()
    data = _experience(FIRST)
    as_string = {**data, "verification": json.dumps(data["verification"])}
    code_as_string = {**data, "verification": {"command": "t", "exit_code": "0"}}

    async def main() -> None:
        async with _connect(transport, tmp_path / "home", project) as c:
            recorded = await _call(c, "lore_record", as_string)
            assert recorded["verified"] is True
            refused = await c.call_tool("lore_record", code_as_string, read_timeout_seconds=60)
            assert refused.is_error
            shown = await _call(c, "lore_show", {"id": recorded["id"]})
            assert shown["item"]["provenance"]["verification"]["exit_code"] == 0

    anyio.run(main)


def _planted(task: str, token: str) -> dict[str, Any]:
    """A verified experience whose commands, once mined and run, print ``token``.

    Checks run sandboxed in a disposable copy, so a command leaves no trace outside it: what
    it printed, kept in the check's output tail, is the proof that it ran.
    """
    experience = _experience(task)
    experience["commands"] = [
        {"command": f"{PY} -c 'print(\"{token}\")'", "exit_code": 0},
        {"command": f"{PY} -c 'print(1)'", "exit_code": 0},
    ]
    experience["verification"] = {"command": f"{PY} -c 'print(2)'", "exit_code": 0}
    return experience


def _record_dream_and_check(
    transport: str, home: Path, project: Path, token: str, allow: bool | str
) -> Any:
    async def main() -> Any:
        async with _connect(transport, home, project, allow_checks=allow) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            await _call(client, "lore_record", _planted(FIRST, token))
            await _call(client, "lore_record", _planted(SECOND, token))
            [candidate] = (await _call(client, "lore_dream", {}))["candidates"]
            result = await client.call_tool(
                "lore_check_candidate",
                {"candidate_id": candidate["id"]},
                read_timeout_seconds=60,
            )
            return names, result

    return anyio.run(main)


def _printed(check_run: dict[str, Any]) -> str:
    return "".join(result["output_tail"] for result in check_run["results"])


def test_without_the_operators_consent_no_recorded_command_runs_over_mcp(tmp_path, transport):
    home, project, token = tmp_path / "home", tmp_path / "project", uuid.uuid4().hex
    project.mkdir()
    names, result = _record_dream_and_check(transport, home, project, token, allow=False)
    assert names == TOOLS - {"lore_check_candidate"}
    assert result.is_error
    memory = ["memory", "--home", str(home), "--project", str(project)]
    shown = CliRunner().invoke(app, [*memory, "show", "cand-1", "--json"])
    assert json.loads(shown.stdout)["state"] == "candidate"  # never checked
    # The operator still checks candidates from the command line.
    checked = CliRunner().invoke(app, [*memory, "candidates", "check", "cand-1", "--json"])
    assert checked.exit_code == 0, checked.output
    assert token in _printed(json.loads(checked.stdout))


@pytest.mark.parametrize("consent", [True, "flag"], ids=["environment", "allow-checks-flag"])
def test_with_the_operators_consent_candidate_checks_run_over_mcp(tmp_path, consent, transport):
    home, project, token = tmp_path / "home", tmp_path / "project", uuid.uuid4().hex
    project.mkdir()
    names, result = _record_dream_and_check(transport, home, project, token, allow=consent)
    assert names == TOOLS
    assert not result.is_error, result.content
    assert result.structured_content["passed"] is True, result.structured_content
    assert token in _printed(result.structured_content)
