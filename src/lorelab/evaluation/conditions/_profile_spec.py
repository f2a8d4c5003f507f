"""The memory profile file: its pydantic model (the JSON Schema comes from it) and the small
template language that builds a tool's arguments from lorelab's request.

A template is JSON. Objects with one of these keys are evaluated; everything else is literal:

- ``{"$ref": "request.task"}``: the value at a dotted path (``null`` when absent, or
  ``"default"``);
- ``{"$format": "task: {request.task}"}``: a string with ``{path}`` placeholders (a list is
  joined with ``"; "``, ``null`` is empty);
- ``{"$each": "request.commands", "$item": TEMPLATE}``: one rendering per element, with the
  element bound as ``item``;
- ``{"$join": [TEMPLATE, ...], "sep": " "}``: the non-empty rendered strings joined.

An object key whose value renders to ``null`` is left out. Nothing is evaluated as code.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Final, Literal

from pydantic import Field, model_validator

from lorelab._model import RecordModel

PROFILE_SCHEMA_VERSION: Final = 1
OperationName = Literal[
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
]
TEMPLATE_KEYS: Final = ("$ref", "$format", "$each", "$join")
_PLACEHOLDER: Final = re.compile(r"\{([A-Za-z_][A-Za-z0-9_.]*)\}")


def compiled(pattern: str) -> re.Pattern[str]:
    """``pattern`` compiled; a bad one is a validation error naming it."""
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"bad regex {pattern!r}: {exc}") from None


class TemplateError(ValueError):
    """A template that cannot be evaluated (named with where it is)."""


class Extract(RecordModel):
    """How to read one value from a tool's answer: a dotted ``path`` into the answer
    (structured content, or its text parsed as JSON), or a ``regex`` on the answer's text
    (the first match's group ``group``)."""

    path: str | None = Field(default=None, description="Dotted path, e.g. entities.0.name.")
    regex: str | None = Field(default=None, description="A regular expression on the text.")
    group: int | str = Field(default=1, description="The regex group that holds the value.")

    @model_validator(mode="after")
    def _one_source(self) -> Extract:
        if (self.path is None) == (self.regex is None):
            raise ValueError("give exactly one of path and regex")
        if self.regex is not None:
            compiled(self.regex)
        return self


class ItemsSpec(RecordModel):
    """How to read the served items from an answer: a ``path`` to a list of objects, or a
    ``regex`` whose every match is one item (its named groups are the item's fields).
    ``id``, ``task`` and ``text`` name each item's fields (a path inside a listed object,
    or a group name)."""

    path: str | None = None
    regex: str | None = None
    id: str = Field(description="The item's id: a path in the item, or a regex group name.")
    task: str | None = Field(default=None, description="The task the item records, if any.")
    text: str | None = Field(default=None, description="What the host is handed of the item.")

    @model_validator(mode="after")
    def _one_source(self) -> ItemsSpec:
        if (self.path is None) == (self.regex is None):
            raise ValueError("give exactly one of path and regex")
        if self.regex is not None:
            pattern = compiled(self.regex)
            missing = [
                name
                for name in (self.id, self.task, self.text)
                if name is not None and name not in pattern.groupindex
            ]
            if missing:
                raise ValueError(f"the regex has no named group {', '.join(missing)}")
        return self


class FollowUp(RecordModel):
    """A second call made with the first answer's item ids (search, then detail): its
    ``arguments`` template sees ``ids``; its answer's text becomes the brief's text."""

    tool: str
    arguments: Any = Field(description="Template; ``ids`` holds the first answer's item ids.")


class OperationSpec(RecordModel):
    """One protocol operation: the tool, how its arguments are built, how its answer is read.

    With a ``codec`` profile only ``tool`` is read: the codec translates."""

    tool: str
    arguments: Any = Field(
        default_factory=lambda: {"$ref": "request"},
        description="Template of the tool's arguments (default: lorelab's request as is).",
    )
    id: Extract | None = Field(default=None, description="The stored record's id (record).")
    items: ItemsSpec | None = Field(default=None, description="The served items (prepare).")
    errors: list[str] = Field(
        default_factory=list,
        description="Regexes on the answer's text: a match is a refusal even when the tool "
        "does not flag an error (a silent discard is not a store).",
    )
    follow_up: FollowUp | None = None

    @model_validator(mode="after")
    def _patterns(self) -> OperationSpec:
        for pattern in self.errors:
            compiled(pattern)
        check_template(self.arguments, f"{self.tool}.arguments")
        if self.follow_up is not None:
            check_template(self.follow_up.arguments, f"{self.follow_up.tool}.arguments")
        return self


class ServerSpec(RecordModel):
    """How the server is started: its default argv and its environment. Strings may name
    ``{home}`` (the memory home, --home), ``{project}`` (the pristine project copy
    the server runs in) and ``{peers}`` (``$LORELAB_PEERS``, where install-peers put them)."""

    argv: list[str] | None = Field(default=None, description="Default argv (null: none).")
    env: dict[str, str] = Field(default_factory=dict)
    git_dir: str | None = Field(
        default=None,
        description="A directory made an empty git repository before the server starts (for "
        "servers that scope memories by git project), e.g. {home}/project.",
    )


class SeedingSpec(RecordModel):
    """How each seed is proven stored. ``returned-id``: every record answer must yield an
    id (no refusal text) and the ids must be distinct; ``show`` also shows each one."""

    proof: Literal["returned-id", "show"] = "returned-id"


class ProfileSpec(RecordModel):
    """A memory profile file (``lorelab eval conditions profile check FILE``)."""

    schema_version: Literal[1] = Field(description="Profile-file format version (1).")
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    description: str = ""
    source: str | None = Field(
        default=None, description="Where the tool interface was taken from (a capture, a URL)."
    )
    codec: Literal["lorelab", "memcoder"] | None = Field(
        default=None,
        description="A translation shipped in lorelab (its own server, MemCoder); null: the "
        "templates and extractors below translate.",
    )
    operations: dict[OperationName, OperationSpec]
    unsupported: dict[OperationName, str] = Field(
        default_factory=dict, description="Why each missing operation is missing."
    )
    server: ServerSpec = Field(default_factory=ServerSpec)
    seeding: SeedingSpec = Field(default_factory=SeedingSpec)
    assigns_ids: bool = False
    checks_by_runner: bool = False
    lock_via_lorelab_cli: bool = False
    agent_id: str | None = None

    @model_validator(mode="after")
    def _required(self) -> ProfileSpec:
        missing = [op for op in ("prepare", "record") if op not in self.operations]
        if missing:
            raise ValueError(f"operations lacks the required {', '.join(missing)}")
        if self.codec is None and self.operations["prepare"].items is None:
            raise ValueError("operations.prepare needs items (how served items are read)")
        if self.codec is None and self.operations["record"].id is None:
            raise ValueError("operations.record needs id (how a stored record is proven)")
        return self


def lookup(namespace: Any, path: str) -> Any:
    """The value at dotted ``path`` (list indices as numbers); ``None`` when absent."""
    value = namespace
    for part in path.split(".") if path else []:
        if isinstance(value, Mapping):
            value = value.get(part)
        elif isinstance(value, list) and part.isdigit():
            index = int(part)
            value = value[index] if index < len(value) else None
        else:
            return None
        if value is None:
            return None
    return value


def as_text(value: Any) -> str:
    """How a value reads inside a string: a list joined by ``"; "``, ``null`` empty."""
    if value is None:
        return ""
    if isinstance(value, list):
        return "; ".join(as_text(element) for element in value if element is not None)
    if isinstance(value, Mapping):
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    return str(value)


def render(template: Any, namespace: Mapping[str, Any]) -> Any:
    """``template`` evaluated against ``namespace`` (see the module docstring)."""
    if isinstance(template, list):
        return [value for value in (render(t, namespace) for t in template) if value is not None]
    if not isinstance(template, Mapping):
        return template
    if "$ref" in template:
        found = lookup(namespace, str(template["$ref"]))
        return template.get("default") if found is None else found
    if "$format" in template:
        return _PLACEHOLDER.sub(
            lambda match: as_text(lookup(namespace, match.group(1))), str(template["$format"])
        )
    if "$each" in template:
        elements = lookup(namespace, str(template["$each"]))
        if not isinstance(elements, list):
            return []
        rendered = (render(template.get("$item"), {**namespace, "item": e}) for e in elements)
        return [value for value in rendered if value not in (None, "")]
    if "$join" in template:
        parts = [as_text(render(part, namespace)) for part in template["$join"]]
        return str(template.get("sep", " ")).join(part for part in parts if part)
    rendered_object = {key: render(value, namespace) for key, value in template.items()}
    return {key: value for key, value in rendered_object.items() if value is not None}


def check_template(template: Any, where: str) -> None:
    """Refuse an unknown ``$`` key or a malformed directive before anything runs."""
    if isinstance(template, list):
        for index, element in enumerate(template):
            check_template(element, f"{where}[{index}]")
        return
    if not isinstance(template, Mapping):
        return
    directives = [key for key in template if str(key).startswith("$")]
    unknown = [key for key in directives if key not in (*TEMPLATE_KEYS, "$item")]
    if unknown:
        raise TemplateError(f"{where}: unknown template key {unknown[0]}")
    if "$join" in template and not isinstance(template["$join"], list):
        raise TemplateError(f"{where}: $join takes a list")
    if "$each" in template and "$item" not in template:
        raise TemplateError(f"{where}: $each needs $item")
    for key, value in template.items():
        if key not in ("$ref", "$format", "$each"):
            check_template(value, f"{where}.{key}")


def profile_schema() -> dict[str, Any]:
    """The JSON Schema of the profile file."""
    return ProfileSpec.model_json_schema(by_alias=True)
