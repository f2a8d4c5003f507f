"""Memory profiles read from files: a profile file (TOML or JSON, ``_profile_spec``) becomes a
:class:`MemoryProfile`. Files without a ``codec`` are translated by their own templates and
extractors (:class:`DataProfile`); the shipped ``lorelab`` and ``memcoder`` files name the
codec in ``_profiles``. The shipped files live in ``profiles/`` beside this module.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tomllib
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from lorelab.errors import InvalidInput, PreflightError, UsageError
from lorelab.evaluation.conditions._profile_spec import (
    ItemsSpec,
    OperationSpec,
    ProfileSpec,
    TemplateError,
    as_text,
    lookup,
    render,
)
from lorelab.evaluation.conditions._profiles import (
    OPERATIONS,
    MemCoderProfile,
    MemoryDecodeError,
    MemoryProfile,
)
from lorelab.io import loads_strict, read_bounded, sha256_bytes, validate_model

PROFILES_DIR: Final = Path(__file__).parent / "profiles"
SHIPPED: Final = (
    "lorelab",
    "memcoder",
    "server-memory",
    "basic-memory",
    "memorix",
    "memory-keeper",
)
PEERS_ENV: Final = "LORELAB_PEERS"
_NO_ITEMS_REASON: Final = "the memory's search returned nothing for this task"


@dataclass(frozen=True, slots=True)
class DataProfile(MemoryProfile):
    """A profile translated by its file's templates and extractors alone."""

    spec: ProfileSpec | None = None
    operations: Mapping[str, OperationSpec] = field(default_factory=dict)

    def _op(self, operation: str) -> OperationSpec:
        return self.operations[operation]

    def request(
        self,
        operation: str,
        arguments: Mapping[str, Any],
        context: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        namespace = {
            "request": dict(arguments),
            "context": dict(context or {}),
            "call": {"uid": uuid.uuid4().hex[:12]},
        }
        rendered = render(self._op(operation).arguments, namespace)
        if not isinstance(rendered, dict):
            raise MemoryDecodeError(f"{operation}: the arguments template gave no object")
        return rendered

    def argument_names(self) -> list[tuple[str, str, list[str]]]:
        named = []
        for operation, spec in self.operations.items():
            calls = [(spec.tool, spec.arguments)]
            if spec.follow_up is not None:
                calls.append((spec.follow_up.tool, spec.follow_up.arguments))
            for tool, template in calls:
                if isinstance(template, Mapping) and not any(k.startswith("$") for k in template):
                    named.append((operation, tool, [str(key) for key in template]))
        return named

    def refusal(self, operation: str, text: str) -> str | None:
        for pattern in self._op(operation).errors:
            if re.search(pattern, text):
                shown = " ".join(text.split())[:300]
                return f"the answer matches the refusal pattern {pattern!r}: {shown}"
        return None

    def decode_answer(self, operation: str, value: Any, text: str) -> dict[str, Any]:
        spec = self._op(operation)
        result: dict[str, Any] = {}
        if spec.id is not None:
            found = _extract(spec.id.path, spec.id.regex, spec.id.group, value, text)
            result["id"] = None if found in (None, "") else str(found)
            result["verified"] = None
        if spec.items is not None:
            items = read_items(spec.items, value, text)
            if operation == "prepare":
                return brief_from_items(items)
            result["items"] = items
            result["total"] = len(items)
        return result

    def follow_up(
        self, operation: str, decoded: Mapping[str, Any]
    ) -> tuple[str, dict[str, Any]] | None:
        follow = self._op(operation).follow_up
        if follow is None:
            return None
        ids = [item["id"] for item in decoded.get("experiences") or [] if item.get("id")]
        if not ids:
            return None
        rendered = render(follow.arguments, {"ids": ids})
        if not isinstance(rendered, dict):
            raise MemoryDecodeError(f"{operation}: the follow-up template gave no object")
        return follow.tool, rendered

    def merge_follow_up(self, operation: str, decoded: dict[str, Any], text: str) -> dict[str, Any]:
        if text.strip():
            return {**decoded, "text": text.strip()}
        return decoded


def _extract(path: str | None, regex: str | None, group: int | str, value: Any, text: str) -> Any:
    if path is not None:
        return lookup(value, path)
    match = re.search(regex or "", text)
    return match.group(group) if match else None


def read_items(spec: ItemsSpec, value: Any, text: str) -> list[dict[str, Any]]:
    """The served items of an answer, each as ``{id, task, text, kind}``."""
    rows: list[Mapping[str, Any]] = []
    if spec.path is not None:
        found = lookup(value, spec.path) if spec.path else value
        if found is not None and not isinstance(found, list):
            raise MemoryDecodeError(f"{spec.path}: expected a list, got {type(found).__name__}")
        rows = [row for row in found or [] if isinstance(row, Mapping)]
    else:
        rows = [match.groupdict() for match in re.finditer(spec.regex or "", text)]
    items = []
    for row in rows:
        item_id = lookup(row, spec.id) if spec.path is not None else row.get(spec.id)
        if item_id in (None, ""):
            continue

        def field_of(name: str | None, row: Mapping[str, Any] = row) -> str | None:
            if name is None:
                return None
            got = lookup(row, name) if spec.path is not None else row.get(name)
            return as_text(got).strip() or None

        items.append(
            {
                "id": str(item_id),
                "kind": "experience",
                "task": field_of(spec.task),
                "text": field_of(spec.text),
            }
        )
    return items


def brief_from_items(items: list[dict[str, Any]]) -> dict[str, Any]:
    """lorelab's Brief from a search's items: every item is served, as a line of text."""
    if not items:
        return {
            "brief_id": None,
            "text": None,
            "empty": True,
            "reason": _NO_ITEMS_REASON,
            "experiences": [],
            "skills": [],
            "principles": [],
        }
    lines = [f"- [{item['id']}] {item.get('text') or item.get('task') or ''}" for item in items]
    return {
        "brief_id": None,
        "text": "Notes from memory:\n" + "\n".join(lines),
        "empty": False,
        "reason": None,
        "experiences": items,
        "skills": [],
        "principles": [],
    }


def parse_profile(data: bytes, source: str) -> ProfileSpec:
    """Parse profile-file bytes (TOML when ``source`` ends in .toml, else JSON)."""
    if source.endswith(".toml"):
        try:
            raw: Any = tomllib.loads(data.decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise InvalidInput(f"{source}: not TOML: {exc}") from None
    else:
        raw = loads_strict(data, source)
    try:
        return validate_model(ProfileSpec, raw, source)
    except TemplateError as exc:
        raise InvalidInput(f"{source}: {exc}") from None


def build_profile(spec: ProfileSpec, path: str | None, sha256: str | None) -> MemoryProfile:
    """The :class:`MemoryProfile` a profile file describes."""
    common: dict[str, Any] = {
        "name": spec.name,
        "tools": {operation: op.tool for operation, op in spec.operations.items()},
        "unsupported": {
            operation: spec.unsupported.get(operation, "the profile maps no tool")
            for operation in OPERATIONS
            if operation not in spec.operations
        },
        "lock_via_lorelab_cli": spec.lock_via_lorelab_cli,
        "assigns_ids": spec.assigns_ids,
        "checks_by_runner": spec.checks_by_runner,
        "path": path,
        "sha256": sha256,
        "server_argv": tuple(spec.server.argv) if spec.server.argv else None,
        "server_env": dict(spec.server.env),
        "server_git_dir": spec.server.git_dir,
        "seed_proof": spec.seeding.proof,
    }
    # Operations a profile maps but also explains (lorelab's lock through its CLI) keep the
    # explanation: it is what preflight says about them.
    common["unsupported"].update(
        {op: reason for op, reason in spec.unsupported.items() if op in spec.operations}
    )
    if spec.codec == "lorelab":
        return MemoryProfile(**common)
    if spec.codec == "memcoder":
        if spec.agent_id is not None:
            common["agent_id"] = spec.agent_id
        return MemCoderProfile(**common)
    operations: dict[str, OperationSpec] = dict(spec.operations.items())
    return DataProfile(**common, spec=spec, operations=operations)


def load_profile(path: str | os.PathLike[str]) -> MemoryProfile:
    """Read, check and build the profile in ``path`` (bad input: :class:`InvalidInput` or
    :class:`SchemaError`, one line naming the file)."""
    source = os.fspath(path)
    data = read_bounded(path, "manifest")
    spec = parse_profile(data, source)
    return build_profile(spec, os.path.abspath(source), sha256_bytes(data))


def shipped_profile_path(name: str) -> Path:
    """The file of a profile shipped with lorelab."""
    return PROFILES_DIR / f"{name}.json"


def shipped_profile(name: str) -> MemoryProfile:
    """A profile shipped with lorelab, by name."""
    if name not in SHIPPED:
        raise UsageError(f"no shipped memory profile {name!r}; shipped: {', '.join(SHIPPED)}")
    return load_profile(shipped_profile_path(name))


def prepare_server_dirs(profile: MemoryProfile, home: Path | None, project: Path) -> None:
    """Create the memory home, and the git directory the profile asks for (``git init``)."""
    if home is not None:
        home.mkdir(parents=True, exist_ok=True)
    if profile.server_git_dir is None:
        return
    target = Path(_fill(profile, profile.server_git_dir, home, project))
    if (target / ".git").exists():
        return
    target.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["git", "init", "-q", str(target)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    if done.returncode != 0:
        raise PreflightError(
            f"memory profile {profile.name}: git init {target} failed: {done.stderr.strip()}"
        )


def server_values(
    profile: MemoryProfile, home: Path | None, project: Path
) -> tuple[list[str] | None, dict[str, str]]:
    """The profile's default argv and environment with ``{home}``, ``{project}`` and
    ``{peers}`` filled in; a placeholder with nothing to fill is a :class:`UsageError`."""
    argv = (
        [_fill(profile, part, home, project) for part in profile.server_argv]
        if profile.server_argv
        else None
    )
    if profile.server_git_dir is not None:
        _fill(profile, profile.server_git_dir, home, project)
    env = {key: _fill(profile, value, home, project) for key, value in profile.server_env.items()}
    return argv, env


def _fill(profile: MemoryProfile, text: str, home: Path | None, project: Path) -> str:
    values: dict[str, str | None] = {
        "home": str(home) if home is not None else None,
        "project": str(project),
        "peers": os.environ.get(PEERS_ENV) or None,
    }
    why = {
        "home": "give --home DIR",
        "peers": f"set {PEERS_ENV} to the folder scripts/install_peers.sh installed into",
    }

    def one(match: re.Match[str]) -> str:
        key = match.group(1)
        value = values.get(key)
        if value is None:
            raise UsageError(
                f"memory profile {profile.name}: {{{key}}} in its server settings has no "
                f"value; {why.get(key, 'unknown placeholder')}"
            )
        return value

    return re.sub(r"\{(home|project|peers)\}", one, text)


def profile_summary(profile: MemoryProfile) -> dict[str, Any]:
    """What ``profile check`` prints: the operations it maps and those it lacks."""
    return {
        "name": profile.name,
        "sha256": profile.sha256,
        "operations": dict(profile.tools),
        "unsupported": [entry.to_json() for entry in profile.unsupported_operations()],
        "seedProof": profile.seed_proof,
        "serverEnv": dict(profile.server_env),
        "serverArgv": list(profile.server_argv) if profile.server_argv else None,
    }


def dumps_profile_schema() -> str:
    """The profile file's JSON Schema as text."""
    return json.dumps(ProfileSpec.model_json_schema(by_alias=True), indent=2, sort_keys=True)
