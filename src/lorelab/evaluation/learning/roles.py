"""Which worker plays each role of a learning run, what kind of worker it is, and what that
makes the run's evidence.

``--agent`` names the worker of every role; ``--architect-agent``, ``--author-agent`` and
``--reviewer-agent`` hand one role to another worker. Both arms use the same assignment. A run
in which any role is played by the protocol fixture is ``protocol-fixture`` evidence, and the
summary names those roles.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Generic, Literal, TypeVar

from lorelab._model import RecordModel
from lorelab.errors import LorelabError, WorkerUnavailable
from lorelab.io import canonical_bytes, sha256_bytes
from lorelab.workers import (
    SHIPPED_ADAPTERS,
    WorkerIdentity,
    bind_identity,
    cannot_start,
    check_identity,
    is_fixture_agent,
    worker_name,
)

TestRole = Literal["architect", "author", "reviewer"]
TEST_ROLES: Final[tuple[TestRole, ...]] = ("architect", "author", "reviewer")
T = TypeVar("T")
WorkerKind = Literal[
    "protocol-fixture", "rule-based", "search-based", "agent-cli", "model-endpoint", "external"
]
_KINDS: Final[dict[str, WorkerKind]] = {
    "static": "rule-based",
    "pynguin": "search-based",
    "claude": "agent-cli",
    "codex": "agent-cli",
    "gemini": "agent-cli",
    "openai": "model-endpoint",
}


class PerRole(RecordModel, Generic[T]):
    """One value for each test role; on disk ``{"architect": .., "author": .., "reviewer": ..}``."""

    architect: T
    author: T
    reviewer: T

    def get(self, role: TestRole) -> T:
        """The value of ``role``."""
        value: T = getattr(self, role)
        return value

    def pairs(self) -> Iterator[tuple[TestRole, T]]:
        """``(role, value)`` in role order."""
        for role in TEST_ROLES:
            yield role, self.get(role)


M = TypeVar("M", bound=type)


def picklable(model: M) -> M:
    """Register a parametrized ``PerRole[X]`` under its name in this module, so ``pickle``
    finds it: the executors ship trial kits and records to worker processes and nodes."""
    globals()[model.__qualname__] = model
    return model


picklable(PerRole[WorkerIdentity])


def adapter_name(argv: Sequence[str]) -> str | None:
    """The shipped adapter ``argv`` runs (``python -m lorelab.workers.adapters.<m> ...``)."""
    items = list(argv)
    modules = {module: name for name, module in SHIPPED_ADAPTERS.items()}
    for index, arg in enumerate(items[1:], start=1):
        if arg == "-m" and index + 1 < len(items):
            return modules.get(items[index + 1])
        if arg.startswith("-m") and len(arg) > 2:
            return modules.get(arg[2:])
        if not arg.startswith("-"):
            return None
    return None


def worker_kind(argv: Sequence[str]) -> WorkerKind:
    """What kind of worker ``argv`` is: the protocol fixture, the rule-based static worker,
    Pynguin (search-based), an agent CLI adapter, or an external program."""
    if is_fixture_agent(argv):
        return "protocol-fixture"
    name = adapter_name(argv)
    return _KINDS.get(name or "", "external")


@dataclass(frozen=True, slots=True)
class RoleAssignment:
    """The argv of the worker that plays each role; the same for both arms."""

    architect: tuple[str, ...]
    author: tuple[str, ...]
    reviewer: tuple[str, ...]

    @classmethod
    def of(
        cls,
        agent: Sequence[str],
        *,
        architect: Sequence[str] | None = None,
        author: Sequence[str] | None = None,
        reviewer: Sequence[str] | None = None,
    ) -> RoleAssignment:
        """``agent`` for every role not given its own worker."""
        return cls(
            architect=tuple(architect or agent),
            author=tuple(author or agent),
            reviewer=tuple(reviewer or agent),
        )

    def argv(self, role: TestRole) -> tuple[str, ...]:
        """The argv of ``role``'s worker."""
        value: tuple[str, ...] = getattr(self, role)
        return value

    def items(self) -> Iterator[tuple[TestRole, tuple[str, ...]]]:
        """``(role, argv)`` in role order."""
        for role in TEST_ROLES:
            yield role, self.argv(role)

    def fixture_roles(self) -> list[TestRole]:
        """The roles the protocol fixture plays."""
        return [role for role, argv in self.items() if is_fixture_agent(argv)]

    def kinds(self) -> dict[TestRole, WorkerKind]:
        """The kind of each role's worker."""
        return {role: worker_kind(argv) for role, argv in self.items()}


def bind_roles(
    assignment: RoleAssignment, *, cwd: Path, operator_identity: str | None
) -> PerRole[WorkerIdentity]:
    """Bind each distinct worker once; roles that share an argv share its identity.

    A binding failure is re-raised as the same error class with the roles named.
    """
    bound: dict[tuple[str, ...], WorkerIdentity] = {}
    for _, argv in assignment.items():
        if argv not in bound:
            try:
                bound[argv] = bind_identity(
                    list(argv), cwd=cwd, operator_identity=operator_identity
                )
            except LorelabError as exc:
                roles = [r for r, a in assignment.items() if a == argv]
                raise type(exc)(f"{' and '.join(roles)} worker: {exc}") from None
    return PerRole[WorkerIdentity](
        architect=bound[assignment.architect],
        author=bound[assignment.author],
        reviewer=bound[assignment.reviewer],
    )


def model_changes(assignment: RoleAssignment, receipts: Sequence[Any]) -> list[str]:
    """Each change of the model a worker's responses name, between the calls of one trial.

    ``receipts`` are the trial's role receipts in call order; calls to the same worker argv
    must all name the same model (a call that names none is unknown, not a change).
    """
    first: dict[tuple[str, ...], tuple[str, str]] = {}
    changes: list[str] = []
    for receipt in receipts:
        claimed = receipt.model.claimed
        if claimed is None or receipt.role not in TEST_ROLES:
            continue
        argv = assignment.argv(receipt.role)
        if argv not in first:
            first[argv] = (receipt.role, claimed)
        elif first[argv][1] != claimed:
            role, model = first[argv]
            changes.append(
                f"{receipt.role}: the server named model {claimed!r}; the {role} call of this "
                f"trial named {model!r}"
            )
    return changes


def check_startable(
    assignment: RoleAssignment, identities: PerRole[WorkerIdentity], env: Mapping[str, str]
) -> None:
    """Raise :class:`WorkerUnavailable` for the first worker that cannot start in ``env``,
    naming its roles, the worker and the fix (one line)."""
    checked: set[tuple[str, ...]] = set()
    for role, argv in assignment.items():
        if argv in checked:
            continue
        checked.add(argv)
        problem = cannot_start(identities.get(role), env)
        if problem is not None:
            roles = [r for r, a in assignment.items() if a == argv]
            named = " and ".join([", ".join(roles[:-1]), roles[-1]] if len(roles) > 1 else roles)
            raise WorkerUnavailable(
                f"the {named} worker {worker_name(argv)} cannot start: {problem}"
            )


def check_roles(identities: PerRole[WorkerIdentity], *, cwd: Path) -> list[str]:
    """Re-check every role's identity in ``cwd``; the changes, each prefixed with its role.

    A worker shared by several roles is checked once per role, so each role names its change.
    """
    changes: list[str] = []
    for role, identity in identities.pairs():
        check = check_identity(identity, cwd=cwd)
        changes += [f"{role}: {change}" for change in check.changes]
    return changes


def identity_digest(identity: WorkerIdentity | dict[str, Any]) -> str:
    """SHA-256 of an identity's canonical JSON (a model, or its JSON as a receipt holds it),
    to tie a trial's roles to the manifest's."""
    value = (
        identity.model_dump(mode="json", by_alias=True)
        if isinstance(identity, WorkerIdentity)
        else identity
    )
    return sha256_bytes(canonical_bytes(value))
