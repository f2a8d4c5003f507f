"""What keeps the protocol honest before and during a run: the memory's seeds and stored
experiences checked against the holdouts, each served item's provenance, and the files a
verify command runs (so a host that edits its own test is flagged, not trusted)."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from lorelab.errors import PreflightError
from lorelab.evaluation.conditions._manifest import ConditionsManifest, TaskSpec
from lorelab.evaluation.conditions._memory import LIST_LIMIT, MemoryToolError, MemoryUnderTest

# Files that change what pytest runs without being named by the verify command.
PYTEST_CONFIG_FILES: Final = ("pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini")
_SHOWN: Final = 5
TRAILING_PUNCTUATION: Final = ".,;:!?…"


def task_key(text: Any) -> str | None:
    """How two tasks are compared: whitespace collapsed, casefolded, trailing punctuation
    dropped (the memory lock's rule)."""
    if not isinstance(text, str) or not text.strip():
        return None
    return " ".join(text.split()).casefold().rstrip(TRAILING_PUNCTUATION).rstrip() or None


def lock_tasks(manifest: ConditionsManifest) -> list[str]:
    """What the lock names: each holdout's id, prompt and rendered prompt (how hosts see it)."""
    tasks: list[str] = []
    for task in manifest.tasks:
        if task.holdout:
            tasks += task_texts(manifest, task)
    return list(dict.fromkeys(tasks))


def task_texts(manifest: ConditionsManifest, task: TaskSpec) -> list[str]:
    """The texts a record of ``task`` may carry: its id, its prompt, its rendered prompt."""
    return [task.id, task.prompt, manifest.render_prompt(task)]


def _keys(manifest: ConditionsManifest, task: TaskSpec) -> set[str]:
    return {key for key in map(task_key, task_texts(manifest, task)) if key}


@dataclass(frozen=True, slots=True)
class HoldoutKeys:
    """Every holdout's normalised id, prompt and rendered prompt, mapped to its task id."""

    by_key: Mapping[str, str]

    def match(self, task_id: Any, task: Any) -> str | None:
        """The holdout a record with ``task_id`` and ``task`` text records, if any."""
        for value in (task_id, task):
            key = task_key(value)
            if key is not None and key in self.by_key:
                return self.by_key[key]
        return None


def holdout_keys(manifest: ConditionsManifest) -> HoldoutKeys:
    """The keys of :func:`lock_tasks`, each mapped to the holdout it names."""
    found: dict[str, str] = {}
    for task in manifest.tasks:
        if task.holdout:
            for key in _keys(manifest, task):
                found.setdefault(key, task.id)
    return HoldoutKeys(found)


def _item(shown: Mapping[str, Any]) -> Mapping[str, Any]:
    item = shown.get("item", shown)
    return item if isinstance(item, Mapping) else {}


def _listing(items: Sequence[str]) -> str:
    more = f" (and {len(items) - _SHOWN} more)" if len(items) > _SHOWN else ""
    return ", ".join(items[:_SHOWN]) + more


def _task_problem(
    item: Mapping[str, Any],
    label: str,
    manifest: ConditionsManifest,
    expected: str | None,
    holdouts: HoldoutKeys,
) -> str | None:
    """Why ``item`` (an experience) may not serve as the seed of ``expected``, or ``None``."""
    recorded_id, text = item.get("task_id"), item.get("task")
    hit = holdouts.match(recorded_id, text)
    if hit is not None:
        return f"{label} records holdout task {hit}; nothing promoted may come from a holdout"
    if expected is None:
        return None
    if isinstance(recorded_id, str) and recorded_id.strip():
        if recorded_id != expected:
            return f"{label} records task {recorded_id!r}, not the declared seed task {expected}"
        return None
    if task_key(text) not in _keys(manifest, manifest.task(expected)):
        return (
            f"{label} records no task id and its task text is not seed task {expected}'s id or "
            "prompt"
        )
    return None


async def _show(memory: MemoryUnderTest, item_id: str) -> Mapping[str, Any]:
    return _item(await memory.call("show", {"id": item_id}))


async def check_seeds(memory: MemoryUnderTest, manifest: ConditionsManifest) -> dict[str, Any]:
    """Confirm in memory what the manifest declares: each seed verified, QA-approved and a
    record of its own seed task (never of a holdout); the Skill promoted from exactly those
    experiences, each of its sources shown and checked the same way."""
    if not memory.supports("show"):
        return {"checked": False, "reason": "the memory offers no show operation"}
    holdouts = holdout_keys(manifest)
    declared = {seed.experience_id: seed.task_id for seed in manifest.seeds}
    problems: list[str] = []
    shown: dict[str, Mapping[str, Any]] = {}
    for seed in manifest.seeds:
        label = f"seed experience {seed.experience_id}"
        try:
            item = await _show(memory, seed.experience_id)
        except MemoryToolError as exc:
            problems.append(f"{label}: {exc.message}")
            continue
        shown[seed.experience_id] = item
        if item.get("trust") != "verified":
            problems.append(f"{label} is not verified")
        if item.get("qa") != "approved":
            problems.append(f"{label} is not QA-approved")
        problem = _task_problem(item, label, manifest, seed.task_id, holdouts)
        if problem:
            problems.append(problem)
    sources: list[str] = []
    try:
        skill = await _show(memory, manifest.skill.id)
    except MemoryToolError as exc:
        problems.append(f"Skill {manifest.skill.id}: {exc.message}")
        skill = {}
    if skill:
        raw = skill.get("source_experience_ids")
        sources = [str(value) for value in raw] if isinstance(raw, list) else []
        expected = {origin.experience_id for origin in manifest.skill.promoted_from}
        if skill.get("kind") != "skill":
            problems.append(f"{manifest.skill.id} is not a Skill")
        elif set(sources) != expected:
            problems.append(
                f"Skill {manifest.skill.id} was promoted from {sorted(sources)}, the manifest "
                f"declares {sorted(expected)}"
            )
        for source in sources:
            label = f"Skill {manifest.skill.id} source experience {source}"
            if source in shown:
                item = shown[source]
            else:
                try:
                    item = await _show(memory, source)
                except MemoryToolError as exc:
                    problems.append(f"{label}: {exc.message}")
                    continue
            problem = _task_problem(item, label, manifest, declared.get(source), holdouts)
            if problem and problem not in problems:
                problems.append(problem)
    if problems:
        raise PreflightError("the memory does not hold the declared seeds: " + "; ".join(problems))
    return {
        "checked": True,
        "seeds": [seed.experience_id for seed in manifest.seeds],
        "seedTasks": declared,
        "skill": manifest.skill.id,
        "skillSources": sources,
        "holdoutsChecked": "each seed and each Skill source was shown; none records a holdout",
    }


async def check_memory_clean(
    memory: MemoryUnderTest, manifest: ConditionsManifest
) -> dict[str, Any]:
    """Refuse a memory that already holds an experience of a holdout task (by task id or
    normalised task text): it would serve a holdout its own past solution."""
    if not memory.supports("list"):
        return {
            "checked": False,
            "reason": (
                "the memory offers no list operation; every served item is checked per run "
                "instead (own_solutions_served)"
            ),
        }
    try:
        listing = await memory.call("list", {"kind": "experience", "limit": LIST_LIMIT})
    except MemoryToolError as exc:
        raise PreflightError(f"the memory's experiences could not be listed: {exc}") from None
    raw = listing.get("items")
    items = [item for item in raw if isinstance(item, Mapping)] if isinstance(raw, list) else []
    total = listing.get("total")
    if isinstance(total, int) and not isinstance(total, bool) and total > len(items):
        raise PreflightError(
            f"the memory holds {total} experiences, more than the {len(items)} one list call "
            "returns; the runner cannot confirm that none records a holdout task"
        )
    holdouts = holdout_keys(manifest)
    leaks = [
        f"{item.get('id')} ({hit})"
        for item in items
        if (hit := holdouts.match(item.get("task_id"), item.get("task"))) is not None
    ]
    if leaks:
        raise PreflightError(
            f"the memory already holds {len(leaks)} experience(s) of holdout tasks: "
            f"{_listing(leaks)}; they would serve holdouts their own past solutions (use a "
            "memory home without this evaluation's outcomes)"
        )
    return {"checked": True, "experiences": len(items), "holdoutExperiences": 0}


@dataclass(frozen=True, slots=True)
class ServedCheck:
    """What the runner found out about the items one piece of guidance served."""

    checked: bool
    unchecked: tuple[str, ...] = ()
    own_solutions: tuple[str, ...] = ()
    items: list[dict[str, Any]] = field(default_factory=list)

    @property
    def tiers(self) -> dict[str, int] | None:
        """How many served items the memory graded ``match`` and ``related``; None when it
        graded none of them (a memory without tiers, or nothing served)."""
        graded = [str(item["tier"]) for item in self.items if item.get("tier") is not None]
        if not graded:
            return None
        return {tier: graded.count(tier) for tier in ("match", "related")}

    @property
    def unchecked_served(self) -> bool | None:
        """True when an unverified or unchecked item was served; False when every served
        item was checked, or nothing was served; ``None`` when unknown."""
        if self.unchecked:
            return True
        return False if self.checked or not self.items else None


async def _skill_problem(memory: MemoryUnderTest, item: Mapping[str, Any]) -> str | None:
    candidate = item.get("candidate_id")
    if item.get("origin") == "dream" and not candidate:
        return "a Dream Skill that names no candidate"
    if not candidate:
        return None
    try:
        shown = await _show(memory, str(candidate))
    except MemoryToolError as exc:
        return f"its candidate {candidate} cannot be shown: {exc.message}"
    last = shown.get("last_check")
    passed = isinstance(last, Mapping) and last.get("passed") is True
    if shown.get("state") != "promoted" or not passed:
        return (
            f"its candidate {candidate} is {shown.get('state')!r} "
            f"({'checks passed' if passed else 'checks not passed'})"
        )
    return None


async def check_served(
    memory: MemoryUnderTest,
    manifest: ConditionsManifest,
    task: TaskSpec,
    served_ids: Iterable[str],
    brief_items: Mapping[str, Mapping[str, Any]],
) -> ServedCheck:
    """Show every served item: an experience must be verified; a Skill that came from a Dream
    candidate must come from a promoted candidate whose checks passed; anything else served
    is unchecked. On a holdout, an item recording that very task is its own past solution.

    Without a show operation only the brief's own item fields are available: provenance stays
    unknown (``checked`` false) and own solutions are found by the items' task text."""
    own = _keys(manifest, task) if task.holdout else set()
    can_show = memory.supports("show")
    unchecked: list[str] = []
    own_solutions: list[str] = []
    details: list[dict[str, Any]] = []
    for served in dict.fromkeys(served_ids):
        detail: dict[str, Any] = {"id": served}
        item: Mapping[str, Any] = brief_items.get(served, {})
        # The grade the memory served the item with (lorelab's graded briefs), as served.
        for key in ("tier", "confidence"):
            if item.get(key) is not None:
                detail[key] = item[key]
        problem: str | None = None
        if can_show:
            try:
                item = await _show(memory, served)
            except MemoryToolError as exc:
                problem = f"cannot be shown: {exc.message}"
            if problem is None:
                kind = item.get("kind")
                detail["kind"] = kind
                if kind == "experience":
                    if item.get("trust") != "verified":
                        problem = f"an experience with trust {item.get('trust')!r}"
                elif kind == "skill":
                    problem = await _skill_problem(memory, item)
                else:
                    problem = f"a {kind or 'item of unknown kind'}, neither experience nor Skill"
            if problem is not None:
                unchecked.append(served)
                detail["unchecked"] = problem
        if own and (task_key(item.get("task_id")) in own or task_key(item.get("task")) in own):
            own_solutions.append(served)
            detail["ownSolution"] = True
        details.append(detail)
    return ServedCheck(can_show, tuple(unchecked), tuple(own_solutions), details)


def verify_files(task: TaskSpec, paths: Iterable[str]) -> list[str]:
    """The project files the verify command names: a file, or every file under a directory
    (``path::test`` counts as ``path``)."""
    known = list(paths)
    named: set[str] = set()
    for arg in task.verify_argv()[1:]:
        if arg.startswith("-"):
            continue
        target = posixpath.normpath(arg.split("::", 1)[0])
        if target in (".", "") or target.startswith("/") or target.startswith(".."):
            continue
        named.update(path for path in known if path == target or path.startswith(target + "/"))
    return sorted(named)


def edited_verify_files(task: TaskSpec, paths: Iterable[str], changed: Iterable[str]) -> list[str]:
    """Changed files that decide what the verify command checks: the files it names, any
    ``conftest.py``, and pytest's configuration files at the project root."""
    targets = set(verify_files(task, paths))
    return sorted(
        path
        for path in changed
        if path in targets
        or posixpath.basename(path) == "conftest.py"
        or path in PYTEST_CONFIG_FILES
    )
