"""A stand-in MCP server with MemCoder's tool names, for the memcoder profile's tests.

It is a test double, not MemCoder: no public description of MemCoder's argument and result
shapes was available, so it takes and returns lorelab-shaped arguments (task, include_skills,
budget_tokens; a brief with text, empty, experiences, skills). With ``--only-prepare`` it
serves memcoder_prepare alone, to show that a server lacking required tools is refused.
"""

import sys
from typing import Any

from mcp.server.mcpserver import MCPServer

server = MCPServer("memcoder-standin")
RECORDED: list[dict[str, Any]] = []


@server.tool()
def memcoder_prepare(task: str, include_skills: bool = True, budget_tokens: int = 1200) -> dict:
    """Brief a task."""
    return {
        "brief_id": "mc-brief-1",
        "empty": False,
        "text": f"Earlier verified work touched shop/pricing.py (budget {budget_tokens}).",
        "experiences": [{"id": "mc-exp-1"}],
        "skills": [{"id": "mc-skill-1"}] if include_skills else [],
    }


if "--only-prepare" not in sys.argv:

    @server.tool()
    def memcoder_start(task: str) -> dict:
        """Plan a task."""
        return {
            "plan_id": None,
            "skill_id": None,
            "steps": [],
            "reason": "the stand-in has no Skills",
            "brief": {"brief_id": "mc-brief-2", "empty": True, "text": ""},
        }

    @server.tool()
    def memcoder_record(task: str, summary: str, outcome: str) -> dict:
        """Record an experience."""
        RECORDED.append({"task": task, "summary": summary, "outcome": outcome})
        return {"id": f"mc-exp-{len(RECORDED) + 1}", "verified": outcome == "passed"}


server.run("stdio")
