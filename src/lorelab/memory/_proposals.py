"""Worker proposals: each candidate a dreamer worker proposes is judged alone, then stored."""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Sequence
from typing import Final

from lorelab.memory._db import ID, Database, format_id, loads, maybe_one, one, parse_id
from lorelab.memory._dreams import insert_candidate
from lorelab.memory._models import (
    EXIT_CODE_MAX,
    EXIT_CODE_MIN,
    CandidateProposal,
    ProposalOutcome,
    ProposalRefusal,
    WorkerProvenance,
)
from lorelab.memory._procedure import fingerprint
from lorelab.memory._redact import Redactor
from lorelab.memory._requests import ProposalsRequest, ProposalsResult
from lorelab.memory._skill_names import skill_description_problem, skill_name_problem
from lorelab.memory._text import normalise_command

MAX_PROPOSED_COMMANDS: Final = 100
MAX_PROPOSED_COMMAND_CHARS: Final = 2000


def _redact_proposal(redactor: Redactor, proposal: CandidateProposal) -> CandidateProposal:
    """The proposal with secrets redacted from every text the store could keep."""
    return proposal.model_copy(
        update={
            "name": redactor.redact(proposal.name),
            "description": redactor.redact(proposal.description),
            "steps": [redactor.redact(step) for step in proposal.steps],
            "checks": [
                check.model_copy(update={"command": redactor.redact(check.command)})
                for check in proposal.checks
            ],
        }
    )


def _fingerprint(proposal: CandidateProposal) -> str:
    # The same normalisation mined procedures get, so spelling never hides a duplicate.
    return fingerprint([normalise_command(step) for step in proposal.steps])


def _source_problem(conn: sqlite3.Connection, ids: Sequence[str], offered: set[str]) -> str | None:
    """Why ``ids`` are not two or more verified experiences given to the worker, or ``None``."""
    repeated = [value for value, count in Counter(ids).items() if count > 1]
    if repeated:
        return f"source {repeated[0]} is listed more than once"
    if len(ids) < 2:
        return (
            f"it names {len(ids)} source experience(s); a candidate needs at least two "
            "verified experiences of this store"
        )
    for value in ids:
        match = ID.fullmatch(value)
        if match is None or match.group(1) != "exp":
            return f"source {value!r} is not an experience id (exp-N)"
        row = maybe_one(conn, "experiences", int(match.group(2)))
        if row is None:
            return f"source {value} does not exist in this store"
        if row["trust"] != "verified":
            return f"source {value} is not a verified experience"
        if format_id("exp", int(row["id"])) not in offered:
            return f"source {value} was not among the experiences given to the worker"
    return None


def _commands_problem(what: str, commands: Sequence[str]) -> str | None:
    """Why ``commands`` cannot be a candidate's steps (or checks), or ``None``."""
    if not commands:
        return f"it has no {what}s; every candidate needs at least one"
    if len(commands) > MAX_PROPOSED_COMMANDS:
        return f"it has {len(commands)} {what}s; at most {MAX_PROPOSED_COMMANDS} are kept"
    for number, command in enumerate(commands, start=1):
        if not command.strip():
            return f"{what} {number} is blank"
        if len(command) > MAX_PROPOSED_COMMAND_CHARS:
            return (
                f"{what} {number} is {len(command):,} characters; at most "
                f"{MAX_PROPOSED_COMMAND_CHARS:,}"
            )
        if "\x00" in command:
            return f"{what} {number} contains NUL"
    return None


def _judge(
    conn: sqlite3.Connection,
    proposal: CandidateProposal,
    offered: set[str],
    known: dict[str, str],
) -> tuple[ProposalRefusal, str] | None:
    """Why ``proposal`` must not be stored (a refusal code and one line), or ``None``."""
    problem = _source_problem(conn, proposal.source_experience_ids, offered)
    if problem is not None:
        return "sources", problem
    problem = _commands_problem("step", proposal.steps)
    if problem is not None:
        return "steps", problem
    problem = _commands_problem("check", [check.command for check in proposal.checks])
    if problem is not None:
        return "checks", problem
    for number, check in enumerate(proposal.checks, start=1):
        if not EXIT_CODE_MIN <= check.expected_exit_code <= EXIT_CODE_MAX:
            return "checks", f"check {number} expects exit code {check.expected_exit_code}"
    same = known.get(_fingerprint(proposal))
    if same is not None:
        return "duplicate", f"its steps are the procedure of {same}, already known"
    problem = skill_name_problem(proposal.name)
    if problem is not None:
        return "name", f"name {proposal.name!r}: {problem}"
    taken = conn.execute(
        "SELECT 'candidate' FROM candidates WHERE name = ?1 "
        "UNION SELECT 'Skill' FROM skills WHERE name = ?1",
        (proposal.name,),
    ).fetchone()
    if taken is not None:
        return "name", f"name {proposal.name!r} is already taken by a {taken[0]}"
    problem = skill_description_problem(proposal.description)
    if problem is not None:
        return "description", problem
    return None


def _insert(
    conn: sqlite3.Connection, proposal: CandidateProposal, provenance: WorkerProvenance
) -> int:
    sources = [
        one(conn, "experiences", parse_id(value, "exp")) for value in proposal.source_experience_ids
    ]
    return insert_candidate(
        conn,
        sources,
        name=proposal.name,
        description=proposal.description,
        steps=[{"command": step, "expected_exit_code": 0} for step in proposal.steps],
        checks=[check.model_dump() for check in proposal.checks],
        fingerprint=_fingerprint(proposal),
        origin="worker",
        provenance=provenance,
    )


def _known(conn: sqlite3.Connection) -> dict[str, str]:
    known: dict[str, str] = {}
    for number, print_ in conn.execute("SELECT id, fingerprint FROM candidates"):
        known.setdefault(str(print_), format_id("cand", int(number)))
    for number, steps in conn.execute("SELECT id, steps FROM skills"):
        commands = [step["command"] for step in loads(steps)]
        known.setdefault(fingerprint(commands), format_id("skill", int(number)))
    return known


def _outcome(
    index: int,
    proposal: CandidateProposal,
    refused: tuple[ProposalRefusal, str] | None,
    stored: str | None,
) -> ProposalOutcome:
    return ProposalOutcome(
        index=index,
        name=proposal.name,
        status="refused" if refused is not None else "stored",
        candidate_id=stored,
        refusal=refused[0] if refused is not None else None,
        reason=refused[1] if refused is not None else None,
    )


def add_proposed_candidates(db: Database, request: ProposalsRequest) -> ProposalsResult:
    """Judge each proposal alone; store the sound ones as unchecked candidates.

    A proposal is refused (nothing stored for it) unless it names two or more distinct
    verified experiences among the offered ones, has steps and checks, a valid and untaken
    Agent Skills name, a valid description, and steps that are no known procedure.
    """
    redactor = Redactor()
    redacted = [_redact_proposal(redactor, proposal) for proposal in request.proposals]
    offered = set(request.offered_ids)
    provenance = request.provenance
    stored_provenance = provenance.model_copy(
        update={
            "worker_argv": [redactor.redact(arg) for arg in provenance.worker_argv],
            "operator_identity": redactor.optional(provenance.operator_identity),
        }
    )

    def write(conn: sqlite3.Connection) -> ProposalsResult:
        known = _known(conn)
        outcomes: list[ProposalOutcome] = []
        for index, proposal in enumerate(redacted, start=1):
            refused = _judge(conn, proposal, offered, known)
            stored = None
            if refused is None:
                stored = format_id("cand", _insert(conn, proposal, stored_provenance))
                known[_fingerprint(proposal)] = stored
            outcomes.append(_outcome(index, proposal, refused, stored))
        return ProposalsResult(outcomes=outcomes)

    return db.write(write)
