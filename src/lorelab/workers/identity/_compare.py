"""Comparing bindings: ``check_identity`` binds again and reports every change."""

from __future__ import annotations

from pathlib import Path

from lorelab.errors import LorelabError
from lorelab.workers.identity._bind import bind_argv
from lorelab.workers.identity._models import (
    BoundFile,
    IdentityCheck,
    LauncherRecord,
    WorkerIdentity,
)
from lorelab.workers.identity._served import compare_served


def tool_env(identity: WorkerIdentity) -> dict[str, str]:
    """The environment the tool was chosen from, as far as the choice depended on it."""
    tool = identity.tool
    if tool is not None and tool.source == "variable":
        return {tool.variable: tool.declared}
    return {}


def _target_key(record: LauncherRecord | BoundFile, cwd: str) -> str:
    if record.cwd_relative:
        base = Path(cwd)
        target = Path(record.resolved_target)
        if target == base or base in target.parents:
            return "./" + target.relative_to(base).as_posix()
    return record.resolved_target


def _compare_file(
    label: str,
    old: LauncherRecord | BoundFile,
    new: LauncherRecord | BoundFile,
    old_cwd: str,
    new_cwd: str,
) -> list[str]:
    changes: list[str] = []
    if _target_key(old, old_cwd) != _target_key(new, new_cwd):
        changes.append(
            f"{label}: resolved target changed from {old.resolved_target} to {new.resolved_target}"
        )
    if old.sha256 != new.sha256:
        changes.append(f"{label}: content changed (sha256 {old.sha256[:12]} -> {new.sha256[:12]})")
    if old.mode != new.mode:
        changes.append(f"{label}: permission bits changed from {old.mode} to {new.mode}")
    return changes


def compare_identities(old: WorkerIdentity, new: WorkerIdentity) -> list[str]:
    """Every difference between two bindings of the same argv, one line each."""
    changes: list[str] = []
    if old.declared_argv != new.declared_argv:
        changes.append("declared argv differs")
    changes += _compare_file(
        f"launcher {old.launcher.declared!r}", old.launcher, new.launcher, old.cwd, new.cwd
    )
    if old.launcher.kind != new.launcher.kind:
        changes.append(f"launcher kind changed from {old.launcher.kind} to {new.launcher.kind}")
    before = {(f.kind, f.declared): f for f in old.bound_files}
    after = {(f.kind, f.declared): f for f in new.bound_files}
    for key in before.keys() - after.keys():
        changes.append(f"{key[0]} {key[1]!r}: no longer bound")
    for key in after.keys() - before.keys():
        # An operand that named no file at bind time is data the worker may create, not
        # something the identity bound; every other newly bound file changes what runs.
        if key[0] != "operand":
            changes.append(f"{key[0]} {key[1]!r}: newly bound")
    for key in sorted(before.keys() & after.keys()):
        changes += _compare_file(f"{key[0]} {key[1]!r}", before[key], after[key], old.cwd, new.cwd)
    if old.inline_sources != new.inline_sources:
        changes.append("inline sources differ")
    named_before = (old.tool.declared, old.tool.source) if old.tool else None
    named_now = (new.tool.declared, new.tool.source) if new.tool else None
    if named_before != named_now:
        changes.append(f"agent tool named differently: {named_before} -> {named_now}")
    if old.endpoint is not None and new.endpoint is not None:
        changes += compare_served(old.endpoint.served, new.endpoint.served)
    for module in sorted(old.implementation_hashes.keys() | new.implementation_hashes.keys()):
        was = old.implementation_hashes.get(module)
        now = new.implementation_hashes.get(module)
        if was != now:
            state = "added" if was is None else "removed" if now is None else "changed"
            changes.append(f"lorelab implementation {module}: {state}")
    return changes


def rebind_identity(
    identity: WorkerIdentity, *, cwd: Path
) -> tuple[WorkerIdentity | None, list[str]]:
    """Bind ``identity``'s argv again in ``cwd``; return the fresh binding and every change.

    The fresh binding is ``None`` when the argv cannot be bound any more (that is a change too).
    """
    try:
        fresh = bind_argv(
            identity.declared_argv,
            Path(cwd),
            identity.operator_identity,
            list(identity.search_path),
            list(identity.python_path),
            tool_env(identity),
        )
    except LorelabError as exc:
        return None, [f"cannot bind the worker again: {exc}"]
    return fresh, compare_identities(identity, fresh)


def check_identity(identity: WorkerIdentity, *, cwd: Path) -> IdentityCheck:
    """Bind ``identity``'s argv again in ``cwd`` and report every change; never re-binds it.

    Relative files are compared by their place in the cwd, so one identity checks every trial
    cwd built from the same project; a file that cannot be bound any more is a change too.
    """
    _, changes = rebind_identity(identity, cwd=cwd)
    return IdentityCheck(ok=not changes, changes=tuple(changes))
