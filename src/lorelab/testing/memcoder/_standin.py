"""The stand-in for MemCoder's MCP server: its evaluation tools over the records store
(Skills, Dreams, credit, plan history, Skill health, evaluate)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from lorelab._model import timestamp
from lorelab.testing.memcoder._records import Records
from lorelab.testing.memcoder._schema import (
    CONDITIONS,
    INFLUENCES,
    ToolError,
    _new_id,
    _terms,
    _words,
    check_memcoder_row,
    validate_arguments,
)


class MemCoderStandIn(Records):
    """MemCoder's evaluation tools over an in-process store (optionally a JSON file)."""

    def __init__(self, state_path: Path | None = None, only: Sequence[str] | None = None) -> None:
        super().__init__(state_path)
        if only is not None:
            # Serve only these of the captured tools (to show a server lacking some).
            self.tools = {name: tool for name, tool in self.tools.items() if name in only}
        self.handlers: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
            "memcoder_prepare": self._prepare,
            "memcoder_start": self._start,
            "memcoder_record": self._record,
            "memcoder_promote_skill": self._promote_skill,
            "memcoder_dream": self._dream,
            "memcoder_skill_credit": self._skill_credit,
            "memcoder_plan_history": self._plan_history,
            "memcoder_skill_health": self._skill_health,
            "memcoder_evaluate": self._evaluate,
        }

    def call(self, name: str, arguments: Mapping[str, Any]) -> str:
        """Answer one tool call with MemCoder's result string; a refusal raises ToolError."""
        tool = self.tools.get(name)
        if tool is None:
            raise ToolError(f"Unknown tool: {name}")
        filled = validate_arguments(tool, arguments)
        handler = self.handlers.get(name)
        if handler is None:
            raise ToolError(
                f"Error calling tool '{name}': the MemCoder stand-in does not implement it"
            )
        try:
            answer = handler(filled)
        except ValueError as exc:
            raise ToolError(f"Error calling tool '{name}': {exc}") from None
        self._save()
        return json.dumps(answer, indent=2)

    def _promote_skill(self, args: dict[str, Any]) -> dict[str, Any]:
        owner = args["agent_id"]
        for key, minimum in (("name", 2), ("when_to_use", 3)):
            if not _words(args[key], minimum):
                raise ValueError(f"Skill field '{key}' must be meaningful.")
        if len(args["steps"]) < 2:
            raise ValueError("Skill field 'steps' must contain at least 2 item(s).")
        supporting = []
        for source in args["supporting_experience_ids"]:
            record = self._find(source, owner)
            if record is None or record["type"] != "experience":
                raise ValueError(f"Skill promotion rejected: {source}: experience not found")
            if record.get("qa_verdict") != "approved":
                raise ValueError(f"Skill promotion rejected: {source}: not QA-approved")
            supporting.append(record)
        if len(supporting) < 2 and not args["human_approved"]:
            raise ValueError(
                "Skill promotion requires at least two QA-approved experiences, or one "
                "QA-approved experience with human_approved=true."
            )
        definition = {
            "schema_version": 2,
            "name": args["name"],
            "when_to_use": args["when_to_use"],
            "inputs": args["inputs"],
            "steps": args["steps"],
            "verification": args["verification"],
            "supporting_experience_ids": args["supporting_experience_ids"],
            "human_approved": args["human_approved"],
            "version": 1,
            "health": "unproven",
        }
        skill_id = _new_id("mem")
        self.state["records"].append(
            {
                "id": skill_id,
                "type": "skill",
                "owner": owner,
                "name": args["name"],
                "when_to_use": args["when_to_use"],
                "task": args["name"],
                "solution": " ".join(args["steps"]),
                "skill": definition,
            }
        )
        return {
            "promoted": True,
            "skill": definition,
            "id": skill_id,
            "supporting_experience_count": len(supporting),
        }

    def _latest_candidates(self, owner: str) -> list[dict[str, Any]]:
        latest: dict[str, dict[str, Any]] = {}
        for row in self.state["candidates"]:
            if row["owner"] == owner:
                latest[row["candidate_id"]] = row
        return list(latest.values())

    def _dream(self, args: dict[str, Any]) -> dict[str, Any]:
        owner = args["agent_id"]
        action = args["action"]
        if action == "run":
            return self._dream_run(owner, args["max_candidates"])
        if action == "list":
            return {"owner": owner, "candidates": self._latest_candidates(owner)}
        if action in ("verify", "rollback"):
            candidate_id = args.get("candidate_id")
            if not isinstance(candidate_id, str) or not candidate_id.strip():
                raise ValueError("candidate_id must be a non-empty string.")
            found = [c for c in self._latest_candidates(owner) if c["candidate_id"] == candidate_id]
            if not found:
                raise ValueError(f"Dream candidate was not found: {candidate_id}")
            if action == "rollback":
                row = {**found[0], "status": "rolled_back"}
                self.state["candidates"].append(row)
                return {"candidate_id": candidate_id, "status": "rolled_back"}
            return self._dream_verify(found[0], args["checks"], owner, args["auto_promote"])
        raise ValueError("action must be run, list, verify, or rollback.")

    def _dream_run(self, owner: str, max_candidates: int) -> dict[str, Any]:
        if max_candidates < 1:
            raise ValueError("max_candidates must be a positive integer.")
        episodes = [
            r for r in self._records(owner, "experience") if r.get("qa_verdict") == "approved"
        ]
        existing = {c["candidate_id"] for c in self._latest_candidates(owner)}
        created: list[dict[str, Any]] = []
        for index, first in enumerate(episodes):
            for second in episodes[index + 1 :]:
                overlap = sorted(_terms(first["task"]) & _terms(second["task"]))
                if len(overlap) < 2 or len(created) >= max_candidates:
                    continue
                sources = sorted([first["id"], second["id"]])
                digest = hashlib.sha256("|".join([*overlap[:8], *sources]).encode()).hexdigest()
                candidate_id = f"dream_{digest[:20]}"
                if candidate_id in existing:
                    continue
                candidate = {
                    "schema_version": 1,
                    "kind": "dream_candidate",
                    "candidate_id": candidate_id,
                    "owner": owner,
                    "status": "candidate",
                    "pattern_terms": overlap[:8],
                    "insight": "Verified tasks share a decision pattern around "
                    + ", ".join(overlap[:6])
                    + ". Re-check task-specific assumptions and repeat proof before reuse.",
                    "source_experience_ids": sources,
                    "support_count": 2,
                    "counterexamples": [],
                    "sandbox": {"status": "pending", "checks": []},
                    "created_at": timestamp(),
                }
                self.state["candidates"].append(candidate)
                existing.add(candidate_id)
                created.append(candidate)
        return {
            "automatic": True,
            "owner": owner,
            "source_experiences": len(episodes),
            "created": created,
            "candidates": self._latest_candidates(owner),
            "promotion_policy": (
                "Sandbox evidence is required; trusted records are never changed silently."
            ),
        }

    def _dream_verify(
        self, candidate: dict[str, Any], checks: Any, owner: str, auto_promote: bool
    ) -> dict[str, Any]:
        if candidate["status"] in ("promoted", "rolled_back", "rejected"):
            raise ValueError("Dream candidate is no longer eligible for sandbox evaluation.")
        if not isinstance(checks, list) or not checks:
            raise ValueError("checks must contain at least one sandbox check.")
        for check in checks:
            if (
                not isinstance(check, dict)
                or not str(check.get("name", "")).strip()
                or not isinstance(check.get("passed"), bool)
            ):
                raise ValueError("Each sandbox check needs a name and passed boolean.")
            if not str(check.get("evidence", "")).strip():
                raise ValueError("Each sandbox check needs inspectable evidence.")
        passed = all(check["passed"] for check in checks)
        updated = {
            **candidate,
            "status": "sandboxed" if passed else "rejected",
            "sandbox": {"status": "passed" if passed else "failed", "checks": checks},
        }
        self.state["candidates"].append(updated)
        promoted = None
        if passed and auto_promote:
            record_id = _new_id("mem")
            self.state["records"].append(
                {
                    "id": record_id,
                    "type": "principle",
                    "owner": owner,
                    "task": "Dreamed principle: " + candidate["insight"],
                    "summary": "Automatically consolidated from verified experiences.",
                    "solution": candidate["insight"],
                    "files": ["memcoder_dreaming"],
                }
            )
            self.state["candidates"].append(
                {**updated, "status": "promoted", "promoted_record_id": record_id}
            )
            promoted = {
                "candidate_id": candidate["candidate_id"],
                "record_id": record_id,
                "status": "promoted",
            }
        return {"candidate": updated, "promoted": promoted}

    def _skill_credit(self, args: dict[str, Any]) -> dict[str, Any]:
        if args["influence"] not in INFLUENCES:
            raise ValueError("influence must be changed_behavior, present_only, or ignored.")
        owner = args["agent_id"]
        event = {
            "skill_id": args["skill_id"],
            "owner": owner,
            "outcome": args["outcome"],
            "influence": args["influence"],
            "changed_steps": list(args.get("changed_steps") or []),
            "warning": args.get("warning"),
            "timestamp": timestamp(),
        }
        self.state["credits"].append(event)
        return {"recorded": event, "summary": self._credit_summary(args["skill_id"], owner)}

    def _credit_summary(self, skill_id: str, owner: str) -> dict[str, Any]:
        rows = [
            row
            for row in self.state["credits"]
            if row["skill_id"] == skill_id and row["owner"] == owner
        ]
        influenced = [row for row in rows if row["influence"] == "changed_behavior"]
        return {
            "skill_id": skill_id,
            "present": len(rows),
            "influenced": len(influenced),
            "successful_influence": sum(row["outcome"] == "succeeded" for row in influenced),
            "failed_influence": sum(row["outcome"] == "failed" for row in influenced),
            "ignored": sum(row["influence"] == "ignored" for row in rows),
        }

    def _plan_history(self, args: dict[str, Any]) -> dict[str, Any]:
        owner = args["agent_id"]
        outcomes = [
            row
            for row in self.state["plan_outcomes"]
            if row["plan_id"] == args["plan_id"] and row["owner"] == owner
        ]
        return {"plan_id": args["plan_id"], "agent_id": owner, "outcomes": outcomes}

    def _skill_health(self, args: dict[str, Any]) -> dict[str, Any]:
        owner = args["agent_id"]
        outcomes = [
            row
            for row in self.state["plan_outcomes"]
            if row.get("applied_skill_id") == args["skill_id"] and row["owner"] == owner
        ]
        succeeded = sum(row["status"] == "succeeded" for row in outcomes)
        failed = sum(row["status"] == "failed" for row in outcomes)
        status = "unproven" if not outcomes else "needs_review" if failed >= 2 else "trusted"
        return {
            "skill_id": args["skill_id"],
            "status": status,
            "attempts": len(outcomes),
            "succeeded": succeeded,
            "failed": failed,
            "success_rate": round(succeeded / len(outcomes), 2) if outcomes else None,
            "automatic_retrieval_allowed": status != "needs_review",
            "causal_credit": self._credit_summary(args["skill_id"], owner),
        }

    def _evaluate(self, args: dict[str, Any]) -> dict[str, Any]:
        runs = args["runs"]
        if not runs:
            raise ValueError("Evaluation input must include at least one run.")
        by_condition: dict[str, list[dict[str, Any]]] = {name: [] for name in CONDITIONS}
        seen: set[tuple[str, str]] = set()
        for run in runs:
            checked = check_memcoder_row(run)
            key = (checked["task_id"], checked["condition"])
            if key in seen:
                raise ValueError("Each task_id may have only one run per condition.")
            seen.add(key)
            by_condition[checked["condition"]].append(checked)
        return {
            "schema_version": 1,
            "conditions": {
                name: {
                    "runs": len(by_condition[name]),
                    "passed": sum(run["passed"] for run in by_condition[name]),
                }
                for name in CONDITIONS[:3]
            },
        }
