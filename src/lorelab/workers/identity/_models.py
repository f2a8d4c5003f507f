"""The identity records: what was bound for one worker argv, and what that does not cover."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, Literal

from pydantic import Field

from lorelab._model import RecordModel
from lorelab.workers._tools import ToolSource

SCHEMA_VERSION: Final = "lorelab.worker-identity/1"

VERIFICATION_SCOPE: Final[dict[str, Any]] = {
    "fullRuntimeAttestation": False,
    "bound": [
        "the resolved launcher: content (SHA-256), resolved symlink target, permission bits",
        "the interpreter named by a launcher script's shebang (direct or /usr/bin/env)",
        "Python: inline -c source, the -m module's file and its parent packages' __init__ "
        "files, the script operand",
        "Node: inline -e/-p source, the entrypoint, --require/--import preloads",
        "shells (sh, bash, zsh, dash, ksh...), ruby, perl, php, lua, Rscript, tclsh, deno and "
        "bun: the script operand (which must exist) or the inline program text; for sh -c "
        "text also the commands it starts that resolve on PATH and the files it names",
        "every existing absolute file operand (up to 8 MiB each); for launchers other than "
        "Python and Node also every operand naming an existing file in the trial cwd",
        "every module of the installed lorelab package, the shipped adapters included",
        "the agent CLI a shipped adapter launches (claude, codex, gemini, pynguin), found as "
        "the adapter finds it (its option, else its variable, else PATH), and its shebang "
        "interpreter; when it cannot be found at bind time, notBound says so",
        "for the openai adapter: the declared endpoint and model name, the SHA-256 of the "
        "--model-file it names (whole file, any size), and what the server says it serves "
        "(GET /models ids, vLLM's root, llama.cpp's meta and /props model_path), asked again "
        "before and after every call",
    ],
    "notBound": [
        "shared libraries, the interpreter's standard library and installed packages other "
        "than the files named above",
        "modules a worker imports, and files it reads, while it runs",
        "what shell text does indirectly (variables, globs, substitutions, sourced files), "
        "and the package.json script behind bun run NAME",
        "operands that name no file at bind time (files the worker creates)",
        "environment variables and configuration files of the agent CLIs",
        "the remote model behind an agent CLI: model.verified is always null",
        "the model an OpenAI-compatible server really runs: lorelab records what the server "
        "says it serves and each response's model as claims; a change in either invalidates "
        "the trial, but a server that misreports cannot be caught",
        "processes that leave the worker's process group",
    ],
}

BoundKind = Literal[
    "interpreter",
    "script",
    "module",
    "preload",
    "entrypoint",
    "operand",
    "command",
    "tool",
    "model",
]


class LauncherRecord(RecordModel):
    """The program the child executes, resolved as the child would resolve it."""

    declared: str = Field(description="argv[0] as declared.")
    via: Literal["absolute", "cwd", "path-lookup"] = Field(
        description="How it was resolved: absolute, relative to the trial cwd, or PATH lookup."
    )
    path: str = Field(description="The absolute path that is executed (before symlinks).")
    resolved_target: str = Field(description="The path with every symlink resolved.")
    cwd_relative: bool = Field(description="Whether the path was resolved against the trial cwd.")
    kind: Literal["python", "node", "script", "binary"] = Field(
        description="python/node interpreter, a script with a shebang, or another binary."
    )
    sha256: str = Field(description="SHA-256 of the target's content (cap 512 MiB).")
    mode: str = Field(description="Permission bits of the target, octal.")
    size: int = Field(description="Size of the target in bytes.")


class BoundFile(RecordModel):
    """One file the argv names, hashed."""

    kind: BoundKind = Field(description="What the file is to the worker.")
    declared: str = Field(description="How the argv (or shebang) names it.")
    path: str = Field(description="The absolute path (before symlinks).")
    resolved_target: str = Field(description="The path with every symlink resolved.")
    cwd_relative: bool = Field(description="Whether the path was resolved against the trial cwd.")
    sha256: str = Field(description="SHA-256 of the content (cap 8 MiB; 512 MiB for binaries).")
    mode: str = Field(description="Permission bits, octal.")
    size: int = Field(description="Size in bytes.")


class InlineSource(RecordModel):
    """Program text given inline in the argv (``python -c``, ``node -e``, ``sh -c``...)."""

    flag: str = Field(description="The flag that carries the source.")
    sha256: str = Field(description="SHA-256 of the UTF-8 source.")
    bytes: int = Field(description="UTF-8 length of the source.")


class ToolBinding(RecordModel):
    """The agent CLI a shipped adapter launches, resolved at bind time as the adapter will."""

    adapter: str = Field(description="The adapter module that launches the tool.")
    tool: str = Field(description="The tool's name (claude, codex, gemini, pynguin).")
    declared: str = Field(
        description="The executable as named: the option's value, the variable's, or the default."
    )
    source: ToolSource = Field(
        description="Where the name came from: the adapter's option, its variable, or the default."
    )
    option: str = Field(description="The adapter option that names the executable.")
    variable: str = Field(description="The environment variable that names the executable.")
    bound: bool = Field(description="Whether it was found and bound (a bound file of kind tool).")
    path: str | None = Field(description="The executable found; null when not found.")
    reason: str | None = Field(description="Why it is not bound; null when bound.")


class ServedEntry(RecordModel):
    """One model a server lists at ``GET {base}/models``."""

    id: str = Field(description="The entry's id (the name a completion request must use).")
    root: str | None = Field(
        description="vLLM's root: the path or repository it loaded; null when not given."
    )
    meta: dict[str, Any] | None = Field(
        description="llama.cpp's meta (n_params, size, n_vocab...); null when not given."
    )


class ServedModel(RecordModel):
    """What the server said it serves when the identity was bound (asked with no key)."""

    listed: list[ServedEntry] | None = Field(
        description="The GET {base}/models entries; null when the server listed none."
    )
    model_path: str | None = Field(
        description="The model file GET /props names (llama.cpp's server); null when not given."
    )
    unasked: str | None = Field(
        description="Why the server could not be asked (unreachable); null when it answered."
    )
    not_listed: str | None = Field(
        default=None, description="Why listed is null although the server answered."
    )


class EndpointBinding(RecordModel):
    """The OpenAI-compatible endpoint the openai adapter calls, as declared; no call is made."""

    adapter: str = Field(description="The adapter module that calls the endpoint.")
    base_url: str = Field(description="The declared --base-url (no user info, no query).")
    model: str = Field(description="The declared --model name.")
    schema_dialect: str = Field(description="How schema-constrained output is requested.")
    api_key_variable: str = Field(
        description="The variable the key is read from (its value is never recorded)."
    )
    model_file: str | None = Field(
        description="The --model-file path (a bound file of kind model); null when not given."
    )
    model_file_sha256: str | None = Field(
        description="SHA-256 of the model file; null when none was given."
    )
    served: ServedModel | None = Field(
        default=None,
        description="What the server said it serves at binding; compared at every check.",
    )


class ModelRequest(RecordModel):
    """The model the argv asks for; never verified."""

    requested: str | None = Field(description="From --model/-m in the program's arguments.")
    verified: None = Field(default=None, description="Always null: lorelab cannot verify it.")


class WorkerIdentity(RecordModel):
    """Everything bound for one worker argv, collected without running anything."""

    schema_version: Literal["lorelab.worker-identity/1"] = Field(default=SCHEMA_VERSION)
    declared_argv: list[str] = Field(description="The argv exactly as declared.")
    cwd: str = Field(description="The trial cwd the argv was resolved against.")
    search_path: list[str] = Field(description="The PATH entries used for the launcher lookup.")
    python_path: list[str] = Field(description="PYTHONPATH entries used to find -m modules.")
    launcher: LauncherRecord
    bound_files: list[BoundFile]
    inline_sources: list[InlineSource]
    model: ModelRequest
    tool: ToolBinding | None = Field(
        default=None,
        description="The agent CLI a shipped adapter launches; null for other workers.",
    )
    endpoint: EndpointBinding | None = Field(
        default=None,
        description="The endpoint and model the openai adapter calls; null for other workers.",
    )
    operator_identity: str | None = Field(description="The operator's --identity text.")
    implementation_hashes: dict[str, str] = Field(
        description="SHA-256 of every module of the installed lorelab package."
    )
    verification_scope: dict[str, Any] = Field(default_factory=lambda: dict(VERIFICATION_SCOPE))


@dataclass(frozen=True, slots=True)
class IdentityCheck:
    """The result of re-binding an identity: ``ok`` when nothing changed."""

    ok: bool
    changes: tuple[str, ...] = field(default_factory=tuple)
