"""Profiles: adapters between the protocol's memory operations and one memory server's tools.

The runner speaks lorelab's requests and reads lorelab's results (a Brief, a Plan, record
ids). A profile maps each operation's request to the server's tool arguments and decodes the
tool's answer back. An operation the server lacks is named with the reason, and a request the
server cannot express raises :class:`MemoryUnsupported`: the runner records both as
unsupported, never as a failure of the memory and never as a silent no-op.

The translations here are the codecs a profile file may name: ``lorelab`` (our own
``lorelab mcp``: requests and results pass through) and ``memcoder`` (MemCoder 0.3.3b1's MCP
server, built from its captured ``tools/list``). The profiles themselves are files
(``_profile_data``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from lorelab._model import RecordModel

OPERATIONS: Final = (
    "prepare",
    "start",
    "record",
    "dream",
    "check",
    "verify_candidate",
    "promote_candidate",
    "promote_skill",
    "report_outcome",
    "show",
    "list",
    "lock_set",
    "lock_clear",
)
MEMCODER_AGENT_ID: Final = "lorelab-eval"


class MemoryUnsupported(Exception):
    """The memory cannot do what was asked; carries the operation and one line saying why."""

    def __init__(self, operation: str, reason: str) -> None:
        super().__init__(f"memory {operation}: unsupported: {reason}")
        self.operation = operation
        self.reason = reason


class UnsupportedOperation(RecordModel):
    """A protocol operation a profile cannot perform, and why (named in preflight and
    finalize receipts)."""

    operation: str
    reason: str


class MemoryDecodeError(Exception):
    """A tool's answer does not have the shape the profile decodes (an interface failure)."""


@dataclass(frozen=True, slots=True)
class MemoryProfile:
    """How the protocol's operations reach one memory server.

    The base class passes requests and results through unchanged (lorelab's own shapes);
    adapters for other servers override :meth:`request` and :meth:`decode`.
    """

    name: str
    tools: Mapping[str, str]
    unsupported: Mapping[str, str] = field(default_factory=dict)
    lock_via_lorelab_cli: bool = False
    # The memory assigns its own ids: seeding maps the manifest's declared ids to them.
    assigns_ids: bool = False
    # The memory runs no Dream checks: the runner runs them and hands over the evidence.
    checks_by_runner: bool = False
    # The profile file it was read from, and that file's SHA-256 (None: built in code).
    path: str | None = None
    sha256: str | None = None
    # The server's default argv and environment (templates on {home}, {project}, {peers}).
    server_argv: tuple[str, ...] | None = None
    server_env: Mapping[str, str] = field(default_factory=dict)
    server_git_dir: str | None = None
    # How seeding proves each seed stored: "returned-id" or "show".
    seed_proof: str = "returned-id"

    def tool(self, operation: str) -> str | None:
        """The tool name for ``operation``, or ``None`` when the profile has none."""
        return self.tools.get(operation)

    def sent_agent_id(self) -> str | None:
        """The ``agent_id`` sent on every call, or ``None`` when the profile sends none."""
        return None

    def unsupported_operations(self) -> list[UnsupportedOperation]:
        """Every protocol operation this profile cannot perform, with the reason."""
        return [
            UnsupportedOperation(
                operation=operation, reason=self.unsupported.get(operation, "no tool")
            )
            for operation in OPERATIONS
            if operation not in self.tools
        ]

    def request(
        self,
        operation: str,
        arguments: Mapping[str, Any],
        context: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The tool arguments for lorelab's ``arguments``; :class:`MemoryUnsupported` when
        the memory cannot express them. ``context`` carries what only some servers need."""
        if operation == "report_outcome" and arguments.get("rework_count") is None:
            raise MemoryUnsupported(
                operation,
                f"{self.tools.get(operation, operation)} needs a rework count, and the host did "
                "not report its edit-then-verify cycles (its rework is unknown, never 0)",
            )
        return dict(arguments)

    def argument_names(self) -> list[tuple[str, str, list[str]]]:
        """(operation, tool, argument names) for every call whose arguments the profile
        names itself; checked against the server's input schemas (codecs: none)."""
        return []

    def refusal(self, operation: str, text: str) -> str | None:
        """Why an answer that the tool did not flag as an error is still a refusal (a
        profile's ``errors`` patterns); ``None`` when it is not."""
        return None

    def decode_answer(self, operation: str, value: Any, text: str) -> dict[str, Any]:
        """lorelab's result from the tool's answer: ``value`` (structured content, or its
        text parsed as JSON) and ``text`` (its text blocks joined)."""
        return self.decode(operation, value)

    def follow_up(
        self, operation: str, decoded: Mapping[str, Any]
    ) -> tuple[str, dict[str, Any]] | None:
        """A second call (tool, arguments) to make with the decoded answer, or ``None``."""
        return None

    def merge_follow_up(self, operation: str, decoded: dict[str, Any], text: str) -> dict[str, Any]:
        """``decoded`` completed with the follow-up's answer text."""
        return decoded

    def decode(self, operation: str, value: Any) -> dict[str, Any]:
        """lorelab's result from the tool's answer (already parsed from JSON)."""
        if not isinstance(value, dict):
            raise MemoryDecodeError(f"returned a JSON {type(value).__name__}, expected an object")
        return value


def when_to_use(arguments: Mapping[str, Any]) -> str:
    """When a Skill applies, in its own words: an explicit ``when_to_use``, else the lead of
    its description (up to the first colon or full stop), the part that names the problem.
    The rest of a description is the procedure, which MemCoder would match no task to."""
    explicit = _text(arguments.get("when_to_use"))
    if explicit:
        return explicit
    description = _text(arguments.get("description"))
    lead = re.split(r":\s|\.\s|\.$", description, maxsplit=1)[0].strip()
    return lead or description


def _text(value: Any) -> str:
    return " ".join(str(value or "").split())


def _as_dict(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise MemoryDecodeError(f"{what}: expected an object, got {type(value).__name__}")
    return value


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


@dataclass(frozen=True, slots=True)
class MemCoderProfile(MemoryProfile):
    """MemCoder 0.3.3b1, from its captured interface: one ``agent_id`` on every call, results
    decoded from ``{"result": "<JSON string>"}``, ids captured as MemCoder assigns them."""

    agent_id: str = MEMCODER_AGENT_ID

    def sent_agent_id(self) -> str | None:
        """One owner for every record: MemCoder's tools default to different ones."""
        return self.agent_id

    def request(
        self,
        operation: str,
        arguments: Mapping[str, Any],
        context: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        context = context or {}
        agent = {"agent_id": self.agent_id}
        if operation == "prepare":
            # MemCoder's brief has its own fixed token budget; budget_tokens has no equivalent.
            return {
                "problem": arguments["task"],
                "include_skills": bool(arguments.get("include_skills", True)),
                "detail_level": "brief",
                **agent,
            }
        if operation == "start":
            return {"problem": arguments["task"], **agent}
        if operation == "record":
            return self._record(arguments, context)
        if operation == "promote_skill":
            return self._promote(arguments, context)
        if operation == "dream":
            return {"action": "run", **agent}
        if operation == "verify_candidate":
            return {
                "action": "verify",
                "candidate_id": arguments["candidate_id"],
                "checks": list(arguments["checks"]),
                "auto_promote": True,
                **agent,
            }
        if operation == "report_outcome":
            skill_id = context.get("skill_id")
            if not skill_id:
                raise MemoryUnsupported(
                    operation,
                    "memcoder_skill_credit credits a Skill; this plan came from none (its "
                    "outcome is in the plan history through memcoder_record)",
                )
            return {
                "skill_id": str(skill_id),
                "outcome": "succeeded" if arguments.get("passed") else "failed",
                # lorelab sees that the Skill was served, not whether it changed what the host
                # did: causal influence is not claimed.
                "influence": "present_only",
                **agent,
            }
        raise MemoryUnsupported(operation, self.unsupported.get(operation, "no tool"))

    def _record(self, arguments: Mapping[str, Any], context: Mapping[str, Any]) -> dict[str, Any]:
        files = [str(name) for name in _as_list(arguments.get("files")) if str(name).strip()]
        passed = arguments.get("outcome", "passed") == "passed"
        plan_id = arguments.get("plan_id")
        if not passed and not plan_id:
            raise MemoryUnsupported(
                "record",
                "memcoder_record has no outcome field and its QA stores no failed experience; "
                "a failed run without a plan has nowhere to go",
            )
        if not files:
            raise MemoryUnsupported(
                "record", "memcoder_record needs at least one file; the run changed none"
            )
        verification = arguments.get("verification") or {}
        exit_code = verification.get("exit_code")
        digest = verification.get("output_digest")
        source = context.get("evidence_source", "from the run's receipt")
        output = f"exit code {exit_code} ({source})" + (f"; output {digest}" if digest else "")
        checks: list[dict[str, Any]] = [
            {
                "name": "verify command",
                "kind": "test",
                "status": "passed" if exit_code == 0 else "failed",
                "command": _text(verification.get("command")),
                "output": output,
            }
        ]
        for command in _as_list(arguments.get("commands")):
            if isinstance(command, Mapping) and command.get("exit_code") == 0:
                checks.append(
                    {
                        "name": _text(command.get("command")),
                        "kind": "diagnostic",
                        "status": "passed",
                        "command": _text(command.get("command")),
                        "output": f"exit code 0 ({source})",
                    }
                )
        summary = _text(arguments.get("summary"))
        request: dict[str, Any] = {
            "task": _text(arguments.get("task")),
            "files": files,
            "summary": summary,
            "solution": summary,
            "evidence": {"checks": checks},
            **{"agent_id": self.agent_id},
        }
        if plan_id:
            request["plan_id"] = str(plan_id)
        if arguments.get("skill_id"):
            request["applied_skill_id"] = str(arguments["skill_id"])
        return request

    def _promote(self, arguments: Mapping[str, Any], context: Mapping[str, Any]) -> dict[str, Any]:
        sources: Sequence[Mapping[str, Any]] = context.get("sources") or []
        steps = [
            _text(command.get("command"))
            for command in _shared_commands(sources)
            if _text(command.get("command"))
        ]
        verification = list(
            dict.fromkeys(
                _text((source.get("verification") or {}).get("command"))
                for source in sources
                if _text((source.get("verification") or {}).get("command"))
            )
        )
        name = _text(arguments.get("name"))
        if len(name.split()) < 2:
            # MemCoder wants a name of two words or more; the seed's name is kept in the
            # receipt beside the name MemCoder stored.
            name = name.replace("-", " ").replace("_", " ")
        return {
            "name": name,
            "when_to_use": when_to_use(arguments),
            "inputs": ["the task description"],
            "steps": steps,
            "verification": verification,
            "supporting_experience_ids": [
                str(x) for x in _as_list(arguments.get("experience_ids"))
            ],
            "agent_id": self.agent_id,
        }

    def decode(self, operation: str, value: Any) -> dict[str, Any]:
        outer = _as_dict(value, "result")
        raw = outer.get("result")
        if not isinstance(raw, str):
            raise MemoryDecodeError('expected {"result": "<JSON string>"}')
        try:
            inner = _as_dict(json.loads(raw), "decoded result")
        except json.JSONDecodeError as exc:
            raise MemoryDecodeError(f"the result string is not JSON: {exc}") from None
        if operation == "prepare":
            return decode_brief(inner.get("brief"))
        if operation == "start":
            return decode_start(inner)
        if operation == "record":
            recorded = _as_dict(inner.get("recorded"), "recorded")
            experience = recorded.get("experience")
            plan_outcome = recorded.get("plan_outcome")
            return {
                "id": experience.get("id") if isinstance(experience, dict) else None,
                "verified": inner.get("experience_recorded") is True,
                "rejected": _as_list(inner.get("rejected")),
                "qa_verdict": (inner.get("qa") or {}).get("verdict"),
                "plan_outcome": plan_outcome if isinstance(plan_outcome, dict) else None,
            }
        if operation == "promote_skill":
            skill = _as_dict(inner.get("skill"), "skill")
            return {"id": inner.get("id"), "name": skill.get("name")}
        if operation == "dream":
            return {
                "candidates": [
                    {
                        "id": candidate.get("candidate_id"),
                        "source_experience_ids": _as_list(candidate.get("source_experience_ids")),
                        "insight": candidate.get("insight"),
                        "status": candidate.get("status"),
                    }
                    for candidate in _as_list(inner.get("candidates"))
                    if isinstance(candidate, dict) and candidate.get("status") == "candidate"
                ]
            }
        if operation == "verify_candidate":
            candidate = _as_dict(inner.get("candidate"), "candidate")
            promoted = inner.get("promoted")
            sandbox = candidate.get("sandbox") or {}
            return {
                "passed": sandbox.get("status") == "passed",
                "status": candidate.get("status"),
                "promoted_id": promoted.get("record_id") if isinstance(promoted, dict) else None,
                # A promoted Dream becomes a Principle in MemCoder, not a Skill.
                "promoted_kind": "principle" if isinstance(promoted, dict) else None,
            }
        if operation == "report_outcome":
            recorded = _as_dict(inner.get("recorded"), "recorded")
            return {
                "skill_id": recorded.get("skill_id"),
                "health": None,
                "state": None,
                "credit": inner.get("summary"),
            }
        return inner


def _shared_commands(sources: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The exit-0 commands every source ran, in the first source's order."""
    if not sources:
        return []

    def passed(source: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        return [
            c
            for c in _as_list(source.get("commands"))
            if isinstance(c, Mapping) and c.get("exit_code") == 0
        ]

    others = [{_text(c.get("command")) for c in passed(source)} for source in sources[1:]]
    return [c for c in passed(sources[0]) if all(_text(c.get("command")) in o for o in others)]


def shared_commands(sources: Sequence[Mapping[str, Any]]) -> list[str]:
    """The commands (exit 0) that every one of ``sources`` (lorelab record requests) ran."""
    return [_text(command.get("command")) for command in _shared_commands(sources)]


def decode_brief(value: Any) -> dict[str, Any]:
    """lorelab's Brief from MemCoder's decision brief: its evidence items become the served
    experiences, Skills and Principles; its text is the brief as a host would read it."""
    brief = _as_dict(value, "brief")
    evidence = [item for item in _as_list(brief.get("evidence")) if isinstance(item, dict)]
    groups: dict[str, list[dict[str, Any]]] = {"experiences": [], "skills": [], "principles": []}
    lines = []
    for item in evidence:
        kind = str(item.get("type") or "")
        item_files = [str(name) for name in _as_list(item.get("files"))]
        entry: dict[str, Any] = {
            "id": item.get("id"),
            "kind": kind,
            "task": item.get("task"),
            "files": item_files,
            "confidence": item.get("confidence"),
        }
        target = {"skill": "skills", "principle": "principles"}.get(kind, "experiences")
        groups[target].append(entry)
        files = ", ".join(item_files)
        lines.append(
            f"- [{kind} {item.get('id')}] {_text(item.get('task'))}: "
            f"{_text(item.get('guidance'))}" + (f" (files: {files})" if files else "")
        )
    if not evidence:
        return {
            "brief_id": None,
            "text": None,
            "empty": True,
            "reason": _text(brief.get("recommended_next_action")) or "no trusted memory",
            **groups,
        }
    text = "\n".join(
        [
            _text(brief.get("recommended_next_action")),
            *lines,
            _text(brief.get("verification_requirement")),
        ]
    )
    return {"brief_id": None, "text": text, "empty": False, "reason": None, **groups}


def decode_start(value: Mapping[str, Any]) -> dict[str, Any]:
    """lorelab's Plan from MemCoder's ``start``: ``plan.id``, its Skill (if any) and its steps,
    which carry an ``action`` (an instruction), not a command."""
    plan = _as_dict(value.get("plan"), "plan")
    plan_id = plan.get("id")
    if not isinstance(plan_id, str) or not plan_id:
        raise MemoryDecodeError("start: the plan has no id")
    source = plan.get("source_skill")
    skill_id = source.get("id") if isinstance(source, dict) else None
    steps = []
    for step in _as_list(plan.get("steps")):
        if not isinstance(step, dict):
            continue
        entry: dict[str, Any] = {"action": _text(step.get("action"))}
        checks = [_text(check) for check in _as_list(step.get("verification")) if _text(check)]
        if checks:
            entry["verification"] = checks
        steps.append(entry)
    return {
        "plan_id": plan_id,
        "skill_id": skill_id or None,
        "mode": plan.get("mode"),
        "steps": steps,
        "brief": decode_brief(value.get("brief")),
    }
