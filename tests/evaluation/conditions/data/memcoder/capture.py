"""Capture MemCoder's real MCP interface and result shapes into this folder.

Run by hand, never by the test suite (it needs a MemCoder install)::

    .venv/bin/python tests/evaluation/conditions/data/memcoder/capture.py \
        /opt/memcoder-venv/bin/python /path/to/hf-home

It starts ``python -m adapters.mcp.server`` with ``HF_HUB_OFFLINE=1`` and a fresh, private
``MEMCODER_DB_PATH``, lists its tools with the official MCP SDK client, then calls the tools the
conditions profile uses, in the order an evaluation uses them, and writes every request and
answer (``tools_list.json``, ``calls.json``).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from mcp.client.stdio import StdioServerParameters, stdio_client

from mcp import Client

HERE = Path(__file__).resolve().parent
AGENT = "lorelab-eval"


def _evidence(name: str, command: str) -> dict[str, Any]:
    return {
        "checks": [
            {
                "name": name,
                "kind": "test",
                "status": "passed",
                "command": command,
                "output": "1 passed (exit code 0)",
            }
        ]
    }


async def _main(python: str, hf_home: str) -> None:
    home = Path(tempfile.mkdtemp(prefix="memcoder-capture-"))
    env = {
        "HF_HUB_OFFLINE": "1",
        "HF_HOME": hf_home,
        "MEMCODER_DB_PATH": str(home / "chroma_db"),
        "HOME": str(home),
        "PATH": os.environ["PATH"],
    }
    params = StdioServerParameters(
        command=python, args=["-m", "adapters.mcp.server"], env=env, cwd=str(home)
    )
    calls: list[dict[str, Any]] = []
    with open(home / "server.stderr", "w", encoding="utf-8") as errlog:
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=300) as client:
            listing = await client.list_tools()
            tools = [
                tool.model_dump(mode="json", by_alias=True, exclude_none=True)
                for tool in listing.tools
            ]
            (HERE / "tools_list.json").write_text(
                json.dumps({"tools": tools}, indent=2) + "\n", encoding="utf-8"
            )

            async def call(label: str, tool: str, arguments: dict[str, Any]) -> Any:
                result = await client.call_tool(tool, arguments)
                texts = [block.text for block in result.content if block.type == "text"]
                decoded = None
                if result.structured_content and isinstance(
                    result.structured_content.get("result"), str
                ):
                    decoded = json.loads(result.structured_content["result"])
                calls.append(
                    {
                        "label": label,
                        "tool": tool,
                        "arguments": arguments,
                        "isError": result.is_error,
                        "structuredContent": result.structured_content,
                        "text": texts,
                        "decodedResult": decoded,
                    }
                )
                return decoded

            await call("unknown key refused", "memcoder_prepare", {"problem": "x", "task": "y"})
            await call("missing key refused", "memcoder_record", {"task": "t"})
            await call(
                "a string for a boolean is coerced, not refused",
                "memcoder_prepare",
                {"problem": "x", "include_skills": "no"},
            )
            ids = []
            for task, file, test in (
                (
                    "parse_amount in shop/money.py turns '2.665' into 2.66; finance rounds half "
                    "up, so it must be 2.67.",
                    "shop/money.py",
                    "tests/test_money.py::test_parse_amount_rounds_half_up",
                ),
                (
                    "tax_for in shop/tax.py rounds 1.785 EUR of VAT down to 1.78; VAT must be "
                    "rounded half up to 1.79.",
                    "shop/tax.py",
                    "tests/test_tax.py::test_tax_for_rounds_half_up",
                ),
            ):
                recorded = await call(
                    "record a seed experience",
                    "memcoder_record",
                    {
                        "task": task,
                        "files": [file],
                        "summary": "Found the rounding with grep; now quantizes half up.",
                        "solution": "Quantize to CENT with ROUND_HALF_UP in " + file,
                        "evidence": _evidence("focused test", "python -m pytest -q " + test),
                        "agent_id": AGENT,
                    },
                )
                ids.append(recorded["recorded"]["experience"]["id"])
            await call(
                "record without passed evidence",
                "memcoder_record",
                {
                    "task": "Reserving a negative number of mugs increases stock.",
                    "files": ["shop/inventory.py"],
                    "summary": "Tried a guard in reserve but the test still fails.",
                    "solution": "Not solved: the guard did not hold.",
                    "evidence": {
                        "checks": [
                            {
                                "name": "focused test",
                                "kind": "test",
                                "status": "failed",
                                "command": "python -m pytest -q tests/test_inventory.py",
                                "output": "1 failed",
                            }
                        ]
                    },
                    "agent_id": AGENT,
                },
            )
            await call(
                "promote with a one-word name refused",
                "memcoder_promote_skill",
                {
                    "name": "round-half-up-to-cents",
                    "when_to_use": "Money amounts must round half up to the cent.",
                    "inputs": ["the task"],
                    "steps": ["grep -rn quantize shop", "python -m compileall -q shop"],
                    "verification": ["python -m pytest -q tests/test_money.py"],
                    "supporting_experience_ids": ids,
                    "agent_id": AGENT,
                },
            )
            promoted = await call(
                "promote the seed Skill",
                "memcoder_promote_skill",
                {
                    "name": "round half up to cents",
                    "when_to_use": "Money amounts must round half up to the cent.",
                    "inputs": ["the task"],
                    "steps": ["grep -rn quantize shop", "python -m compileall -q shop"],
                    "verification": ["python -m pytest -q tests/test_money.py"],
                    "supporting_experience_ids": ids,
                    "agent_id": AGENT,
                },
            )
            problem = (
                "An order line of one item at 1.005 EUR totals 1.00 EUR; line totals must "
                "round half up to the cent like the rest of the shop."
            )
            await call(
                "prepare (brief)",
                "memcoder_prepare",
                {"problem": problem, "agent_id": AGENT, "include_skills": False},
            )
            await call(
                "prepare (full, with Skills)",
                "memcoder_prepare",
                {"problem": problem, "agent_id": AGENT, "detail_level": "full"},
            )
            await call(
                "prepare under another agent_id sees nothing",
                "memcoder_prepare",
                {"problem": problem, "detail_level": "full"},
            )
            seed_text = (
                "parse_amount in shop/money.py turns '2.665' into 2.66; finance rounds half "
                "up, so it must be 2.67."
            )
            await call(
                "prepare (full) with a seed's own task text",
                "memcoder_prepare",
                {"problem": seed_text, "agent_id": AGENT, "detail_level": "full"},
            )
            await call(
                "start with a seed's own task text",
                "memcoder_start",
                {"problem": seed_text, "agent_id": AGENT},
            )
            started = await call("start", "memcoder_start", {"problem": problem, "agent_id": AGENT})
            plan_id = started["plan"]["id"]
            dream = await call("dream run", "memcoder_dream", {"action": "run", "agent_id": AGENT})
            await call("dream list", "memcoder_dream", {"action": "list", "agent_id": AGENT})
            candidates = dream.get("candidates") or []
            if candidates:
                await call(
                    "dream verify",
                    "memcoder_dream",
                    {
                        "action": "verify",
                        "agent_id": AGENT,
                        "candidate_id": candidates[0]["candidate_id"],
                        "checks": [
                            {
                                "name": "python -m pytest -q tests/test_money.py",
                                "passed": True,
                                "evidence": "exit code 0 in a disposable copy",
                            }
                        ],
                    },
                )
            skill_id = promoted["id"] if "id" in promoted else promoted.get("skill", {}).get("id")
            await call(
                "record a plan outcome",
                "memcoder_record",
                {
                    "task": problem,
                    "files": ["shop/pricing.py"],
                    "summary": "line_total now quantizes half up to the cent.",
                    "solution": "Quantize to CENT with ROUND_HALF_UP in line_total.",
                    "evidence": _evidence(
                        "focused test",
                        "python -m pytest -q tests/test_pricing.py::test_line_total_rounds_half_up",
                    ),
                    "plan_id": plan_id,
                    "applied_skill_id": skill_id,
                    "agent_id": AGENT,
                },
            )
            await call(
                "skill credit refuses an unknown influence",
                "memcoder_skill_credit",
                {"skill_id": skill_id, "outcome": "succeeded", "influence": "followed"},
            )
            await call(
                "skill credit",
                "memcoder_skill_credit",
                {
                    "skill_id": skill_id,
                    "outcome": "succeeded",
                    "influence": "present_only",
                    "agent_id": AGENT,
                },
            )
            await call(
                "plan history",
                "memcoder_plan_history",
                {"plan_id": plan_id, "agent_id": AGENT},
            )
            await call(
                "skill health",
                "memcoder_skill_health",
                {"skill_id": skill_id, "agent_id": AGENT},
            )
            row = {"task_id": "t1", "passed": True, "rework_count": 0, "guidance_tokens": 0}
            await call(
                "evaluate refuses a null retrieval_relevant",
                "memcoder_evaluate",
                {"runs": [{**row, "condition": "baseline", "retrieval_relevant": None}]},
            )
            await call(
                "evaluate accepts the key left out",
                "memcoder_evaluate",
                {
                    "runs": [
                        {**row, "condition": "baseline"},
                        {**row, "condition": "skill_planned", "retrieval_relevant": True},
                        {**row, "condition": "dreaming", "retrieval_relevant": False},
                    ]
                },
            )
    (HERE / "calls.json").write_text(json.dumps({"calls": calls}, indent=2) + "\n", "utf-8")


if __name__ == "__main__":
    anyio.run(_main, sys.argv[1], sys.argv[2])
