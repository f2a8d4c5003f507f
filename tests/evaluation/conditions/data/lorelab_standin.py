"""A stand-in MCP memory server with lorelab's tool names, driven by a scenario file.

A test double, not lorelab's memory: it serves exactly what the scenario says, so tests can
make a memory serve what the real one never would (an unchecked Dream Skill, an unverified
experience, a holdout's own past solution) or fail on purpose. Usage:

    python lorelab_standin.py SCENARIO.json

Scenario keys: ``items`` (id -> item, shown by lore_show), ``brief`` (what lore_prepare
serves: ``text``, ``experiences`` and ``skills`` as item ids), ``fail_prepare_for`` (task
substrings whose lore_prepare answers with an error), ``plan`` (lore_start's plan, or null),
``list`` (offer lore_list), ``lock`` (offer lore_lock_set / lore_lock_clear), ``dream``
(offer lore_dream and friends, with no candidates). Recorded experiences go to
``state`` (a JSON file) so a later server process lists them.
"""

import json
import sys
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

SCENARIO = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
ITEMS: dict[str, dict[str, Any]] = SCENARIO.get("items", {})
STATE = Path(SCENARIO["state"]) if SCENARIO.get("state") else None
server = MCPServer("lorelab-standin")


def _state() -> dict[str, Any]:
    if STATE is not None and STATE.is_file():
        return json.loads(STATE.read_text(encoding="utf-8"))
    return {"recorded": [], "locks": []}


def _save(state: dict[str, Any]) -> None:
    if STATE is not None:
        STATE.write_text(json.dumps(state), encoding="utf-8")


def _brief(task: str, include_skills: bool) -> dict[str, Any]:
    brief = SCENARIO.get("brief", {})
    experiences = [
        {"id": item_id, "task": ITEMS.get(item_id, {}).get("task", "")}
        for item_id in brief.get("experiences", [])
    ]
    skills = [{"id": item_id} for item_id in brief.get("skills", [])] if include_skills else []
    return {
        "brief_id": "brief-1",
        "task": task,
        "empty": not brief.get("text"),
        "reason": None if brief.get("text") else "nothing relevant",
        "text": brief.get("text", ""),
        "experiences": experiences,
        "skills": skills,
    }


@server.tool()
def lore_prepare(task: str, include_skills: bool = True, budget_tokens: int = 1200) -> dict:
    """Brief a task."""
    for fragment in SCENARIO.get("fail_prepare_for", []):
        if fragment in task:
            raise ToolError(f"stand-in prepare failure for {fragment}")
    return _brief(task, include_skills)


@server.tool()
def lore_start(task: str) -> dict:
    """Plan a task."""
    plan = SCENARIO.get("plan")
    if not plan:
        return {"plan_id": None, "skill_id": None, "steps": [], "reason": "no Skill", "brief": {}}
    return {**plan, "brief": _brief(task, True)}


@server.tool()
def lore_record(
    task: str,
    summary: str,
    outcome: str,
    verification: dict,
    task_id: str | None = None,
    commands: list | None = None,
    files: list | None = None,
    plan_id: str | None = None,
    skill_id: str | None = None,
    host: str | None = None,
    model: str | None = None,
) -> dict:
    """Record an experience (kept in the state file)."""
    state = _state()
    item_id = f"exp-{100 + len(state['recorded'])}"
    state["recorded"].append(
        {
            "kind": "experience",
            "id": item_id,
            "task": task,
            "task_id": task_id,
            "summary": summary,
            "trust": "verified" if outcome == "passed" else "unverified",
            "provenance": {"host": host, "model": model, "verification": verification},
        }
    )
    _save(state)
    return {"id": item_id, "verified": outcome == "passed", "redactions": {}}


@server.tool()
def lore_show(id: str) -> dict:
    """One item by id."""
    for item in _state()["recorded"]:
        if item["id"] == id:
            return {"item": item}
    if id not in ITEMS:
        raise ToolError(f"{id} does not exist in this store")
    return {"item": ITEMS[id]}


if SCENARIO.get("list"):

    @server.tool()
    def lore_list(kind: str = "experience", limit: int = 50) -> dict:
        """Items of one kind, newest first."""
        if kind == "lock":
            locks = _state()["locks"]
            return {"kind": kind, "total": len(locks), "items": locks[::-1][:limit]}
        found = [i for i in ITEMS.values() if i.get("kind") == kind]
        found += [i for i in _state()["recorded"] if kind == "experience"]
        return {"kind": kind, "total": len(found), "items": found[::-1][:limit]}


if SCENARIO.get("lock"):

    @server.tool()
    def lore_lock_set(evaluation_id: str, holdout_tasks: list[str]) -> dict:
        """Set an evaluation lock."""
        state = _state()
        state["locks"].append({"evaluation_id": evaluation_id, "active": True})
        _save(state)
        return {"evaluation_id": evaluation_id, "active": True}

    @server.tool()
    def lore_lock_clear(evaluation_id: str) -> dict:
        """Clear an evaluation lock."""
        state = _state()
        active = [
            lock
            for lock in state["locks"]
            if lock["evaluation_id"] == evaluation_id and lock["active"]
        ]
        if not active:
            raise ToolError(f"no active evaluation lock {evaluation_id!r} to clear")
        for lock in active:
            lock["active"] = False
        _save(state)
        return {"evaluation_id": evaluation_id, "active": False}


if SCENARIO.get("dream"):

    @server.tool()
    def lore_dream() -> dict:
        """A Dream that finds no candidates."""
        return {"candidates": [], "considered_experiences": 0, "already_known": 0}


server.run("stdio")
