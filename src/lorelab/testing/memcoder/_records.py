"""The stand-in's store: records kept per ``agent_id``, lexical retrieval, and the tools that
read and write experiences (prepare, start, record)."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lorelab._model import estimate_tokens, timestamp
from lorelab.testing.memcoder._schema import (
    CHECK_KINDS,
    CHECK_STATUSES,
    MIN_SHARED_TERMS,
    _new_id,
    _terms,
    _words,
    load_tools,
)


class Records:
    """MemCoder's records over an in-process store (optionally a JSON file), and the tools
    that read and write experiences."""

    def __init__(self, state_path: Path | None = None) -> None:
        self.tools = {tool["name"]: tool for tool in load_tools()}
        self.state_path = state_path
        self.state: dict[str, Any] = {
            "records": [],
            "candidates": [],
            "plan_outcomes": [],
            "credits": [],
        }
        if state_path is not None and state_path.exists():
            self.state = json.loads(state_path.read_text(encoding="utf-8"))

    def _save(self) -> None:
        if self.state_path is None:
            return
        temporary = self.state_path.with_suffix(".tmp")
        temporary.write_text(json.dumps(self.state), encoding="utf-8")
        os.replace(temporary, self.state_path)

    # -- records ---------------------------------------------------------------------------

    def _records(self, owner: str, kind: str) -> list[dict[str, Any]]:
        return [
            record
            for record in self.state["records"]
            if record["owner"] == owner and record["type"] == kind
        ]

    def _find(self, record_id: str, owner: str) -> dict[str, Any] | None:
        for record in self.state["records"]:
            if record["id"] == record_id and record["owner"] == owner:
                return dict(record)
        return None

    def _search(self, problem: str, owner: str, kind: str) -> list[dict[str, Any]]:
        wanted = _terms(problem)
        found = []
        for record in self._records(owner, kind):
            text = " ".join(
                str(record.get(key, ""))
                for key in ("task", "summary", "solution", "name", "when_to_use")
            )
            shared = len(wanted & _terms(text))
            if shared >= MIN_SHARED_TERMS:
                confidence = round(min(1.0, shared / max(len(wanted), 1)), 2)
                found.append({**record, "confidence": confidence})
        return sorted(found, key=lambda item: -item["confidence"])[:5]

    @staticmethod
    def _compact(record: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "id": record["id"],
            "task": record.get("task", ""),
            "summary": record.get("summary", ""),
            "solution": record.get("solution", ""),
            "files": record.get("files", []),
            "confidence": record.get("confidence"),
            "record_state": "trusted",
            "skill": record.get("skill"),
            "skill_health": "unproven" if record["type"] == "skill" else None,
        }

    def _retrieve(self, problem: str, owner: str, include_skills: bool) -> dict[str, Any]:
        experiences = self._search(problem, owner, "experience")
        principles = self._search(problem, owner, "principle")
        skills = self._search(problem, owner, "skill") if include_skills else []
        evidence = [
            {
                "id": item["id"],
                "type": item["type"],
                "task": item.get("task") or item.get("name", ""),
                "guidance": item.get("solution") or item.get("when_to_use", ""),
                "files": item.get("files", []),
                "confidence": item["confidence"],
                "health": "unproven" if item["type"] == "skill" else None,
                "proof_status": "trusted/unknown",
            }
            for item in [*skills, *experiences, *principles]
        ]
        confidence = max((item["confidence"] for item in evidence), default=0.0)
        strategy = "memory_guided" if evidence else "normal_reasoning"
        brief: dict[str, Any] = {
            "problem": problem,
            "strategy": strategy,
            "recommended_next_action": (
                "Use the retrieved guidance as a hypothesis; verify it in the current project."
                if evidence
                else "No trusted memory is available; inspect the current project and solve "
                "normally."
            ),
            "evidence": evidence,
            "verification_requirement": (
                "Verify the current result with a host test, build, assertion, or documented "
                "review before recording learning."
            ),
        }
        brief["budget"] = {
            "estimated_tokens": estimate_tokens(json.dumps(brief)),
            "token_budget": 350,
            "within_budget": True,
        }
        return {
            "confidence": confidence,
            "strategy": strategy,
            "brief": brief,
            "skills": skills,
            "experiences": experiences,
            "principles": principles,
        }

    def _prepare(self, args: dict[str, Any]) -> dict[str, Any]:
        if args["detail_level"] not in ("brief", "full"):
            raise ValueError("detail_level must be 'brief' or 'full'.")
        found = self._retrieve(args["problem"], args["agent_id"], args["include_skills"])
        answer: dict[str, Any] = {
            "problem": args["problem"],
            "include_shared": args["include_shared"],
            "include_skills": args["include_skills"],
            "confidence": found["confidence"],
            "strategy": found["strategy"],
            "detail_level": args["detail_level"],
            "brief": found["brief"],
            "available_detail": {
                key: len(found.get(key, []))
                for key in ("skills", "experiences", "mistakes", "principles", "reflections")
            },
            "failure_frontier": [],
        }
        if args["detail_level"] == "full":
            for key in ("skills", "experiences", "mistakes", "principles", "reflections"):
                answer[key] = [self._compact(item) for item in found.get(key, [])]
        return answer

    def _start(self, args: dict[str, Any]) -> dict[str, Any]:
        found = self._retrieve(args["problem"], args["agent_id"], True)
        skills = found["skills"]
        plan: dict[str, Any]
        if skills:
            skill = skills[0]
            definition = skill["skill"]
            steps = [
                {"order": number, "action": step, "source": "skill"}
                for number, step in enumerate(definition["steps"], start=1)
            ]
            steps.append(
                {
                    "order": len(steps) + 1,
                    "action": "Run the skill's required verification in the current project.",
                    "source": "skill_verification",
                    "verification": definition["verification"],
                }
            )
            plan = {
                "schema_version": 1,
                "mode": "skill_guided",
                "goal": args["problem"],
                "strategy": "apply_validated_skill",
                "source_skill": {
                    "id": skill["id"],
                    "name": definition["name"],
                    "when_to_use": definition["when_to_use"],
                    "supporting_experience_ids": definition["supporting_experience_ids"],
                    "health": "unproven",
                },
                "inputs": definition["inputs"],
                "steps": steps,
            }
        else:
            plan = {
                "schema_version": 1,
                "mode": "foundation",
                "goal": args["problem"],
                "strategy": "normal_reasoning",
                "source_skill": None,
                "inputs": [],
                "steps": [
                    {
                        "order": 1,
                        "action": "Inspect the current project, the relevant input, and the "
                        "expected behavior.",
                        "source": "foundation",
                    },
                    {
                        "order": 2,
                        "action": "Make the smallest change that addresses the verified cause.",
                        "source": "foundation",
                    },
                    {
                        "order": 3,
                        "action": "Run a focused host test, build, assertion, or documented "
                        "review.",
                        "source": "foundation_verification",
                    },
                ],
            }
        digest = hashlib.sha256(json.dumps(plan, sort_keys=True).encode("utf-8")).hexdigest()
        plan["id"] = f"plan_{digest[:20]}"
        return {
            "problem": args["problem"],
            "include_shared": args["include_shared"],
            "confidence": found["confidence"],
            "retrieval_strategy": found["strategy"],
            "brief": found["brief"],
            "plan": plan,
        }

    @staticmethod
    def _qa(args: Mapping[str, Any]) -> dict[str, Any]:
        files = args["files"]
        structure = (
            _words(args["task"], 1)
            and _words(args["summary"], 3)
            and _words(args["solution"], 3)
            and isinstance(files, list)
            and any(str(name).strip() for name in files)
        )
        checks = args["evidence"].get("checks")
        malformed = not isinstance(checks, list) or not checks
        passed: list[dict[str, Any]] = []
        failed: list[dict[str, Any]] = []
        for check in checks if isinstance(checks, list) else []:
            if (
                not isinstance(check, dict)
                or check.get("kind") not in CHECK_KINDS
                or check.get("status") not in CHECK_STATUSES
                or not _words(check.get("name"), 1)
            ):
                malformed = True
                continue
            if check["status"] == "passed":
                passed.append(check)
            elif check["status"] == "failed":
                failed.append(check)
        unproven = [
            check
            for check in passed
            if not (_words(check.get("command"), 1) and _words(check.get("output"), 1))
            and check["kind"] in ("test", "build", "lint", "diagnostic")
        ]
        if not structure or malformed or failed:
            verdict = "rejected"
        elif not passed or unproven:
            verdict = "insufficient_evidence"
        else:
            verdict = "approved"
        return {
            "schema_version": 1,
            "verdict": verdict,
            "approved": verdict == "approved",
            "evidence_summary": {
                "check_count": len(checks) if isinstance(checks, list) else 0,
                "passed_checks": [check["name"] for check in passed],
                "failed_checks": [check["name"] for check in failed],
            },
            "verification_playbook": [
                {"name": check["name"], "kind": check["kind"], "command": check.get("command")}
                for check in passed
            ],
        }

    def _record(self, args: dict[str, Any]) -> dict[str, Any]:
        qa = self._qa(args)
        owner = args["agent_id"]
        experience = None
        rejected: list[str] = []
        if qa["approved"]:
            experience = {
                "task": args["task"],
                "files": args["files"],
                "summary": args["summary"],
                "solution": args["solution"],
                "id": _new_id("mem"),
            }
            self.state["records"].append(
                {
                    **experience,
                    "type": "experience",
                    "owner": owner,
                    "qa_verdict": "approved",
                    "verification_playbook": qa["verification_playbook"],
                }
            )
        else:
            rejected.append(f"qa: outcome was not admitted (verdict: {qa['verdict']})")
        plan_outcome = None
        if args.get("plan_id"):
            plan_outcome = {
                "id": _new_id("audit"),
                "plan_id": args["plan_id"],
                "status": "succeeded" if qa["approved"] else "failed",
                "qa_verdict": qa["verdict"],
                "applied_skill_id": args.get("applied_skill_id"),
            }
            self.state["plan_outcomes"].append(
                {**plan_outcome, "owner": owner, "task": args["task"], "timestamp": timestamp()}
            )
        return {
            "recorded": {
                "experience": experience,
                "plan_outcome": plan_outcome,
                "rejected": rejected,
            },
            "experience_recorded": experience is not None,
            "rejected": rejected,
            "qa": qa,
            "plan_outcome": plan_outcome,
        }
