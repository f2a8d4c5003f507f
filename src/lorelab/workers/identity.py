"""Identity binding: which files a worker argv will run, hashed before anything runs.

``bind_identity`` resolves the launcher exactly as the child would (absolute; relative to the
trial cwd; a PATH lookup whose relative entries resolve against the trial cwd), then binds what
the argv names: a launcher script's shebang interpreter, Python ``-c`` source, ``-m`` module and
script, Node ``-e``/``-p`` source, entrypoint and ``--require``/``--import`` preloads, the script
or inline text of shells and other interpreters (:mod:`._interpreters`), and every existing
absolute file operand (for launchers other than Python and Node, every file operand in the trial
cwd too). Credential-like operands are refused without being read.
``check_identity`` binds again and reports every change in content, resolved target or
permission bits; nothing here ever runs the worker.
"""

from __future__ import annotations

import copy
import errno
import importlib.machinery
import os
import re
import stat
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

import lorelab
from lorelab.errors import (
    InputFileError,
    JSONInputError,
    LorelabError,
    PreflightError,
    UsageError,
)
from lorelab.io import (
    LAUNCHER_HASH_CAP,
    SCRIPT_HASH_CAP,
    loads_strict,
    read_bounded,
    sha256_bytes,
    sha256_file,
)
from lorelab.workers._interpreters import Plan, interpreter_family, plan_arguments, shell_words
from lorelab.workers._tools import (
    AGENT_TOOLS,
    ToolSource,
    choose_tool,
    describe_choice,
    find_executable,
    option_value,
    split_path,
)

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
        "processes that leave the worker's process group",
    ],
}

_CREDENTIAL_DIRS: Final = (
    ".ssh",
    ".aws",
    ".config/gcloud",
    ".gnupg",
    ".kube",
    ".docker",
    ".azure",
)
_CREDENTIAL_NAMES: Final = frozenset(
    {
        ".env",
        ".envrc",
        ".netrc",
        "_netrc",
        ".pgpass",
        ".pypirc",
        ".npmrc",
        ".git-credentials",
        ".dockercfg",
    }
)
_CREDENTIAL_SUFFIXES: Final = (".pem", ".key", ".p12", ".pfx")
_CREDENTIAL_PREFIXES: Final = ("id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", ".env.")
_CREDENTIAL_WORDS: Final = ("credential", "secret", "token")

_PYTHON_NAME: Final = re.compile(r"(?:python|pypy)(?:\d+(?:\.\d+)?)?[a-z]?")
_NODE_NAMES: Final = frozenset({"node", "nodejs"})
_NODE_VALUE_OPTIONS: Final = frozenset(
    {
        "-r",
        "--require",
        "--import",
        "--loader",
        "--experimental-loader",
        "-e",
        "--eval",
        "-p",
        "--print",
        "-C",
        "--conditions",
        "--input-type",
        "--title",
        "--env-file",
        "--env-file-if-exists",
        "--redirect-warnings",
        "--experimental-config-file",
    }
)
_NODE_INLINE: Final = frozenset({"-e", "--eval", "-p", "--print"})
_NODE_PRELOAD: Final = frozenset(
    {"-r", "--require", "--import", "--loader", "--experimental-loader"}
)
_NODE_SUFFIXES: Final = ("", ".js", ".cjs", ".mjs", "/index.js")

BoundKind = Literal[
    "interpreter", "script", "module", "preload", "entrypoint", "operand", "command", "tool"
]


class _Wire(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )


class LauncherRecord(_Wire):
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


class BoundFile(_Wire):
    """One file the argv names, hashed."""

    kind: BoundKind = Field(description="What the file is to the worker.")
    declared: str = Field(description="How the argv (or shebang) names it.")
    path: str = Field(description="The absolute path (before symlinks).")
    resolved_target: str = Field(description="The path with every symlink resolved.")
    cwd_relative: bool = Field(description="Whether the path was resolved against the trial cwd.")
    sha256: str = Field(description="SHA-256 of the content (cap 8 MiB; 512 MiB for binaries).")
    mode: str = Field(description="Permission bits, octal.")
    size: int = Field(description="Size in bytes.")


class InlineSource(_Wire):
    """Program text given inline in the argv (``python -c``, ``node -e``, ``sh -c``...)."""

    flag: str = Field(description="The flag that carries the source.")
    sha256: str = Field(description="SHA-256 of the UTF-8 source.")
    bytes: int = Field(description="UTF-8 length of the source.")


class ToolBinding(_Wire):
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


class ModelRequest(_Wire):
    """The model the argv asks for; never verified."""

    requested: str | None = Field(description="From --model/-m in the program's arguments.")
    verified: None = Field(default=None, description="Always null: lorelab cannot verify it.")


class WorkerIdentity(_Wire):
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


def implementation_hashes() -> dict[str, str]:
    """SHA-256 of every ``.py`` module of the installed lorelab package (adapters included)."""
    root = Path(lorelab.__file__).resolve().parent
    hashes: dict[str, str] = {}
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        key = "lorelab/" + path.relative_to(root).as_posix()
        hashes[key] = sha256_file(path, cap=SCRIPT_HASH_CAP)
    return hashes


def _is_file(path: Path) -> bool:
    """``path.is_file()``, except that a name too long for the OS names no file (not a crash)."""
    try:
        return path.is_file()
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            return False
        raise


def _is_dir(path: Path) -> bool:
    """``path.is_dir()``, except that a name too long for the OS names no directory."""
    try:
        return path.is_dir()
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            return False
        raise


def _mode(st: os.stat_result) -> str:
    return f"{stat.S_IMODE(st.st_mode):04o}"


def _home() -> Path:
    return Path(os.path.expanduser("~"))


def credential_reason(operand: str, cwd: Path) -> str | None:
    """Why ``operand`` looks like a credential file, or ``None``. Never opens anything."""
    if not operand or "\x00" in operand:
        return None
    expanded = os.path.expanduser(operand)
    candidate = Path(expanded) if os.path.isabs(expanded) else cwd / expanded
    home = _home()
    for place in {Path(os.path.abspath(candidate)), Path(os.path.realpath(candidate))}:
        for sub in _CREDENTIAL_DIRS:
            secret_dir = home / sub
            if place == secret_dir or secret_dir in place.parents:
                return f"it is under ~/{sub}"
    name = expanded.rstrip("/").rsplit("/", 1)[-1].lower()
    if name in _CREDENTIAL_NAMES:
        return f"{name!r} is a credential file name"
    if name.startswith(_CREDENTIAL_PREFIXES) or name.endswith(_CREDENTIAL_SUFFIXES):
        return f"{name!r} looks like a key or environment file"
    # Free text (a prompt, say) is not a file name; only path-like operands are screened by word.
    path_like = not re.search(r"\s", expanded) and (
        "/" in expanded or "." in name or os.path.lexists(candidate)
    )
    if path_like:
        for word in _CREDENTIAL_WORDS:
            if word in name:
                return f"its name contains {word!r}"
    return None


def _screened_values(operand: str) -> list[str]:
    """The texts of ``operand`` that could name a file, as the program might read them.

    An option's value after ``=``, the text attached to a single-dash flag (``-k/path``,
    ``-kid_rsa``), and whatever follows the first ``/`` or ``~`` anywhere in the operand
    (``-xk/root/.aws/config``, ``src=~/.ssh``): a credential cannot hide behind a flag.
    """
    values: list[str] = []
    if operand.startswith("-"):
        if "=" in operand:
            values.append(operand.split("=", 1)[1])
        if not operand.startswith("--") and len(operand) > 2:
            values.append(operand[2:])
    else:
        values.append(operand)
    for marker in ("/", "~"):
        position = operand.find(marker)
        if position > 0:
            values.append(operand[position:])
    return list(dict.fromkeys(value for value in values if value))


def _refuse_credentials(operands: Iterable[str], cwd: Path) -> None:
    for operand in operands:
        for value in _screened_values(operand):
            reason = credential_reason(value, cwd)
            if reason is not None:
                raise InputFileError(
                    f"worker argv operand {value!r} looks like a credential ({reason}); "
                    "lorelab refuses it and never reads it"
                )


def _resolve_launcher(
    declared: str, cwd: Path, search_path: Sequence[str]
) -> tuple[Path, Literal["absolute", "cwd", "path-lookup"], bool]:
    """Resolve argv[0] as ``execvp`` in the child (already in the trial cwd) would."""
    found = find_executable(declared, cwd, search_path)
    if found is not None:
        return found.path, found.via, found.cwd_relative
    if os.path.isabs(declared):
        raise InputFileError(f"worker launcher {declared!r} is not an executable file")
    if "/" in declared:
        raise InputFileError(
            f"worker launcher {declared!r} is not an executable file in the trial cwd {cwd}"
        )
    raise InputFileError(
        f"worker launcher {declared!r} was not found on PATH (searched {len(search_path)} "
        "entries, relative entries against the trial cwd)"
    )


def _record_file(
    kind: BoundKind, declared: str, path: Path, cwd_relative: bool, cap: int = SCRIPT_HASH_CAP
) -> BoundFile:
    absolute = Path(os.path.abspath(path))
    try:
        st = os.stat(absolute)
    except OSError as exc:
        raise PreflightError(f"{kind} {declared!r} ({absolute}): {exc.strerror}") from None
    return BoundFile(
        kind=kind,
        declared=declared,
        path=str(absolute),
        resolved_target=os.path.realpath(absolute),
        cwd_relative=cwd_relative,
        sha256=sha256_file(absolute, cap=cap),
        mode=_mode(st),
        size=st.st_size,
    )


def _launcher_kind(path: Path, declared: str) -> Literal["python", "node", "script", "binary"]:
    names = {Path(declared).name, path.name, Path(os.path.realpath(path)).name}
    if any(_PYTHON_NAME.fullmatch(name) for name in names):
        return "python"
    if names & _NODE_NAMES:
        return "node"
    if _read_head(path).startswith(b"#!"):
        return "script"
    return "binary"


def _read_head(path: Path, size: int = 512) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read(size)
    except OSError:
        return b""


@dataclass(slots=True)
class _Binding:
    cwd: Path
    search_path: list[str]
    python_path: list[str]
    files: list[BoundFile] = field(default_factory=list)
    inline: list[InlineSource] = field(default_factory=list)
    # The module a Python launcher runs with -m, so a shipped adapter's tool can be bound.
    module: str | None = None

    def bind(
        self, kind: BoundKind, declared: str, path: Path, cwd_relative: bool, cap: int
    ) -> None:
        record = _record_file(kind, declared, path, cwd_relative, cap)
        if all((f.kind, f.path) != (record.kind, record.path) for f in self.files):
            self.files.append(record)

    def inline_source(self, flag: str, source: str) -> None:
        data = source.encode("utf-8", "surrogatepass")
        self.inline.append(InlineSource(flag=flag, sha256=sha256_bytes(data), bytes=len(data)))

    def relative(self, declared: str, kind: str) -> tuple[Path, bool]:
        """Resolve a script-like operand: absolute as is, else against the trial cwd only."""
        if os.path.isabs(declared):
            path, cwd_relative = Path(declared), False
        else:
            path, cwd_relative = self.cwd / declared, True
        if not _is_file(path):
            raise PreflightError(not_a_file(kind, declared, path, self.cwd))
        return path, cwd_relative


def file_type(path: Path) -> str:
    """What ``path`` is in words ("absent", "a directory", "a FIFO"...); never opens it."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "a broken symbolic link" if os.path.islink(path) else "absent"
    except NotADirectoryError:
        return "absent (a parent is not a directory)"
    except OSError as exc:
        return f"unreadable ({exc.strerror})"
    mode = st.st_mode
    for test, name in (
        (stat.S_ISREG, "a regular file"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def not_a_file(kind: str, declared: str, path: Path, cwd: Path) -> str:
    """The preflight message for a script-like operand that is not a regular file."""
    where = "" if os.path.isabs(declared) else f" in the trial cwd {cwd}"
    what = file_type(path)
    if what.startswith("absent"):
        return (
            f"{kind} {declared!r} is {what}{where}; relative paths resolve only against the "
            "trial cwd, never against the lorelab checkout"
        )
    return f"{kind} {declared!r}{where} is {what}, not a script file lorelab can bind"


def _bind_shebang(binding: _Binding, launcher: Path, env_path: Sequence[str]) -> None:
    first = _read_head(launcher, 256).split(b"\n", 1)[0]
    words = first[2:].decode("utf-8", "replace").split()
    if not words:
        raise PreflightError(f"launcher {launcher} has an empty shebang line")
    interpreter = words[0]
    if not os.path.isabs(interpreter):
        raise PreflightError(
            f"launcher {launcher} names a relative shebang interpreter {interpreter!r}"
        )
    binding.bind("interpreter", interpreter, Path(interpreter), False, LAUNCHER_HASH_CAP)
    if Path(interpreter).name == "env":
        names = [word for word in words[1:] if not word.startswith("-")]
        if not names:
            raise PreflightError(f"launcher {launcher}: '#!{interpreter}' names no program")
        program, _, cwd_relative = _resolve_launcher(names[0], binding.cwd, env_path)
        binding.bind("interpreter", names[0], program, cwd_relative, LAUNCHER_HASH_CAP)


def _same_environment(launcher: Path) -> bool:
    ours = Path(sys.executable)
    if os.path.abspath(launcher) == os.path.abspath(ours):
        return True
    return Path(os.path.abspath(launcher)).parent == Path(os.path.abspath(ours)).parent and (
        os.path.realpath(launcher) == os.path.realpath(ours)
    )


def _own_site_path() -> list[str]:
    """Our interpreter's import path without its first entry and without PYTHONPATH entries."""
    ours_env = {entry for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry}
    return [
        entry
        for entry in sys.path[1:]
        if entry and entry not in ours_env and os.path.abspath(entry) not in ours_env
    ]


def _bind_module(
    binding: _Binding, module: str, launcher: Path, isolated: bool, safe_path: bool, no_env: bool
) -> None:
    if not re.fullmatch(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*", module):
        raise PreflightError(f"python -m {module!r} is not a module name")
    search: list[str] = []
    if not (isolated or safe_path):
        search.append(str(binding.cwd))
    if not (isolated or no_env):
        search += [
            entry if os.path.isabs(entry) else str(binding.cwd / entry)
            for entry in binding.python_path
        ]
    own = _same_environment(launcher)
    if own:
        search += _own_site_path()
    paths = search
    parts = module.split(".")
    for index, part in enumerate(parts):
        spec = importlib.machinery.PathFinder.find_spec(part, paths)
        if spec is None:
            scope = (
                "the trial cwd, PYTHONPATH or lorelab's own environment"
                if own
                else "the trial cwd or PYTHONPATH (the interpreter is not lorelab's own, so its "
                "site-packages cannot be read without running it; name the script file instead)"
            )
            raise PreflightError(
                f"python -m {module}: {'.'.join(parts[: index + 1])} not found in {scope}"
            )
        locations = list(spec.submodule_search_locations or [])
        if spec.origin and spec.has_location:
            binding.bind(
                "module",
                ".".join(parts[: index + 1]),
                Path(spec.origin),
                _under(Path(spec.origin), binding.cwd),
                SCRIPT_HASH_CAP,
            )
        if index < len(parts) - 1:
            if not locations:
                raise PreflightError(f"python -m {module}: {part} is not a package")
            paths = locations
        elif locations:
            main = importlib.machinery.PathFinder.find_spec("__main__", locations)
            if main is None or not main.origin:
                raise PreflightError(f"python -m {module}: the package has no __main__ module")
            binding.bind(
                "module",
                f"{module}.__main__",
                Path(main.origin),
                _under(Path(main.origin), binding.cwd),
                SCRIPT_HASH_CAP,
            )


def _under(path: Path, cwd: Path) -> bool:
    absolute = Path(os.path.abspath(path))
    return absolute == cwd or cwd in absolute.parents


@dataclass(frozen=True, slots=True)
class _Parsed:
    program_args: list[str]
    inline_indices: frozenset[int]
    # Whether operands naming existing files relative to the trial cwd are bound too: for every
    # launcher but Python and Node, whose program lorelab cannot otherwise tell from its data.
    relative_operands: bool = False


def _parse_python(binding: _Binding, argv: Sequence[str], launcher: Path) -> _Parsed:
    isolated = safe_path = no_env = False
    index = 1
    while index < len(argv):
        arg = argv[index]
        if arg == "--":
            index += 1
            break
        if arg == "-":
            raise PreflightError(
                "python '-' reads its program from stdin, where lorelab writes the payload"
            )
        if arg.startswith("--"):
            index += 2 if arg == "--check-hash-based-pycs" else 1
            continue
        if not arg.startswith("-"):
            break
        position = 1
        consumed = 1
        while position < len(arg):
            flag = arg[position]
            if flag in "cmWX":
                attached = arg[position + 1 :]
                if attached:
                    value = attached
                elif index + 1 < len(argv):
                    value, consumed = argv[index + 1], 2
                else:
                    raise UsageError(f"worker argv: python -{flag} needs an argument")
                if flag == "c":
                    binding.inline_source("-c", value)
                    inline = {index + 1} if consumed == 2 else {index}
                    return _Parsed(list(argv[index + consumed :]), frozenset(inline))
                if flag == "m":
                    _refuse_credentials([value], binding.cwd)
                    _bind_module(binding, value, launcher, isolated, safe_path, no_env)
                    binding.module = value
                    return _Parsed(list(argv[index + consumed :]), frozenset())
                break
            isolated = isolated or flag == "I"
            safe_path = safe_path or flag == "P"
            no_env = no_env or flag == "E"
            position += 1
        index += consumed
    if index >= len(argv):
        raise PreflightError(
            "the python launcher names no script, -m module or -c source; it would read its "
            "program from stdin, where lorelab writes the payload"
        )
    script = argv[index]
    if script == "-":
        raise PreflightError(
            "python '-' reads its program from stdin, where lorelab writes the payload"
        )
    base = Path(script) if os.path.isabs(script) else binding.cwd / script
    main = base / "__main__.py"
    if _is_dir(base) and _is_file(main):
        # Python runs a directory operand's __main__.py, as it runs a package's with -m.
        binding.bind(
            "script",
            f"{script.rstrip('/')}/__main__.py",
            main,
            not os.path.isabs(script),
            SCRIPT_HASH_CAP,
        )
        return _Parsed(list(argv[index + 1 :]), frozenset())
    path, cwd_relative = binding.relative(script, "python script")
    binding.bind("script", script, path, cwd_relative, SCRIPT_HASH_CAP)
    return _Parsed(list(argv[index + 1 :]), frozenset())


def _node_package_entry(specifier: str, cwd: Path) -> Path | None:
    name_parts = specifier.split("/")
    package = "/".join(name_parts[:2]) if specifier.startswith("@") else name_parts[0]
    subpath = specifier[len(package) :].lstrip("/")
    for base in [cwd, *cwd.parents]:
        root = base / "node_modules" / package
        if not _is_dir(root):
            continue
        if subpath:
            return _node_file(root / subpath)
        main = "index.js"
        manifest = root / "package.json"
        if _is_file(manifest):
            try:
                data = loads_strict(read_bounded(manifest), str(manifest))
            except (InputFileError, JSONInputError):
                data = {}
            if isinstance(data, dict) and isinstance(data.get("main"), str):
                main = data["main"]
        return _node_file(root / main)
    return None


def _node_file(path: Path) -> Path | None:
    for suffix in _NODE_SUFFIXES:
        candidate = Path(f"{path}{suffix}")
        if _is_file(candidate):
            return candidate
    return None


def _bind_node_preload(binding: _Binding, specifier: str) -> None:
    if specifier.startswith("node:"):
        return
    if specifier.startswith(("./", "../", "/")) or specifier in (".", ".."):
        base = Path(specifier) if os.path.isabs(specifier) else binding.cwd / specifier
        found = _node_file(base)
        cwd_relative = not os.path.isabs(specifier)
    else:
        found = _node_package_entry(specifier, binding.cwd)
        cwd_relative = True
    if found is None:
        raise PreflightError(
            f"node preload {specifier!r} was not found relative to the trial cwd {binding.cwd}"
        )
    binding.bind(
        "preload", specifier, found, cwd_relative and _under(found, binding.cwd), SCRIPT_HASH_CAP
    )


def _parse_node(binding: _Binding, argv: Sequence[str]) -> _Parsed:
    index = 1
    inline: set[int] = set()
    while index < len(argv):
        arg = argv[index]
        if arg == "--":
            index += 1
            break
        if arg == "-":
            raise PreflightError(
                "node '-' reads its program from stdin, where lorelab writes the payload"
            )
        if not arg.startswith("-"):
            break
        name, has_value, attached = arg.partition("=")
        if name in _NODE_VALUE_OPTIONS:
            if has_value:
                value, consumed, value_index = attached, 1, index
            elif index + 1 < len(argv):
                value, consumed, value_index = argv[index + 1], 2, index + 1
            else:
                raise UsageError(f"worker argv: node {name} needs an argument")
            if name in _NODE_INLINE:
                binding.inline_source(name, value)
                inline.add(value_index)
                return _Parsed(list(argv[index + consumed :]), frozenset(inline))
            if name in _NODE_PRELOAD:
                _refuse_credentials([value], binding.cwd)
                _bind_node_preload(binding, value)
            index += consumed
            continue
        index += 1
    if index >= len(argv):
        raise PreflightError(
            "the node launcher names no entrypoint or -e/-p source; it would read its program "
            "from stdin, where lorelab writes the payload"
        )
    entry = argv[index]
    base = Path(entry) if os.path.isabs(entry) else binding.cwd / entry
    found = _node_file(base)
    if found is None:
        raise PreflightError(not_a_file("node entrypoint", entry, base, binding.cwd))
    binding.bind("entrypoint", entry, found, not os.path.isabs(entry), SCRIPT_HASH_CAP)
    return _Parsed(list(argv[index + 1 :]), frozenset())


def _requested_model(program_args: Sequence[str]) -> str | None:
    for index, arg in enumerate(program_args):
        if arg.startswith("--model="):
            return arg.split("=", 1)[1] or None
        if arg in ("--model", "-m") and index + 1 < len(program_args):
            return program_args[index + 1]
    return None


def _bind_file_operands(binding: _Binding, operands: Iterable[str], relative: bool) -> None:
    """Bind every operand (or ``--flag=value``) naming an existing regular file.

    Absolute files always; with ``relative``, files relative to the trial cwd too. A file
    already bound in another role (the script) is not bound twice.
    """
    for operand in operands:
        value = operand.split("=", 1)[1] if operand.startswith("-") and "=" in operand else operand
        if not value:
            continue
        if os.path.isabs(value):
            path, cwd_relative = Path(value), False
        elif relative:
            path, cwd_relative = binding.cwd / value, True
        else:
            continue
        if not _is_file(path):
            continue
        absolute = str(Path(os.path.abspath(path)))
        if any(f.path == absolute for f in binding.files):
            continue
        binding.bind("operand", value, path, cwd_relative, SCRIPT_HASH_CAP)


def _bind_shell_text(binding: _Binding, text: str) -> None:
    """Bind what shell command text names: the commands it starts and the files it names."""
    for word, is_command in shell_words(text):
        if is_command and not _ASSIGNMENT_WORD.match(word):
            found = find_executable(word, binding.cwd, binding.search_path)
            if found is not None:
                binding.bind("command", word, found.path, found.cwd_relative, LAUNCHER_HASH_CAP)
                continue
            # A builtin, a function, or a file that is not executable: bound only as a file.
        _bind_file_operands(binding, [os.path.expanduser(word)], relative=True)


def _shell_screen_words(text: str) -> list[str]:
    """Shell words as the credential screen sees them: ``~`` and ``$VAR`` expanded."""
    return [os.path.expandvars(os.path.expanduser(word)) for word, _ in shell_words(text)]


def _bind_plan(binding: _Binding, items: Sequence[str], plan: Plan) -> _Parsed:
    """Screen, then bind, what a recognised interpreter's argv runs (see ``_interpreters``)."""
    label = items[0].rsplit("/", 1)[-1]
    inline_indices = frozenset(entry.index for entry in plan.inline)
    # Screen everything before anything is read: operands, and the words of shell text.
    _refuse_credentials(
        [arg for index, arg in enumerate(items) if index > 0 and index not in inline_indices],
        binding.cwd,
    )
    for entry in plan.inline:
        if entry.shell:
            _refuse_credentials(_shell_screen_words(entry.text), binding.cwd)
    for entry in plan.inline:
        binding.inline_source(entry.flag, entry.text)
        if entry.shell:
            _bind_shell_text(binding, entry.text)
    if plan.script is not None:
        _bind_plan_script(binding, label, plan)
    return _Parsed(list(items[plan.program_start :]), inline_indices, relative_operands=True)


def _bind_plan_script(binding: _Binding, label: str, plan: Plan) -> None:
    script = plan.script
    assert script is not None
    kind = f"{label} script"
    if plan.script_on_path and "/" not in script:
        # ruby -S / perl -S look the script up on PATH, relative entries against the cwd.
        for entry in binding.search_path:
            base = Path(entry) if os.path.isabs(entry) else binding.cwd / entry
            if _is_file(base / script):
                binding.bind(
                    "script", script, base / script, not os.path.isabs(entry), SCRIPT_HASH_CAP
                )
                return
        raise PreflightError(f"{kind} {script!r} was not found on PATH")
    if plan.script_optional:
        candidate = Path(script) if os.path.isabs(script) else binding.cwd / script
        if not os.path.lexists(candidate):
            # A package.json script or installed binary name (bun dev), not a file.
            return
    path, cwd_relative = binding.relative(script, kind)
    binding.bind("script", script, path, cwd_relative, SCRIPT_HASH_CAP)


def _check_argv(argv: Sequence[str]) -> list[str]:
    if isinstance(argv, str) or not isinstance(argv, Sequence):
        raise UsageError("worker argv must be a list of strings")
    items = list(argv)
    if not items:
        raise UsageError("worker argv is empty")
    for item in items:
        if not isinstance(item, str):
            raise UsageError(f"worker argv element {item!r} is not a string")
        if "\x00" in item:
            raise UsageError("worker argv elements must not contain NUL")
    if not items[0]:
        raise UsageError("worker argv[0] (the launcher) is empty")
    return items


def _bind_tool(
    binding: _Binding, program_args: Sequence[str], tool_env: Mapping[str, str]
) -> ToolBinding | None:
    """Bind the agent CLI a shipped adapter will launch, found exactly as the adapter finds it.

    Its shebang interpreter is bound too. A tool that cannot be found now is recorded as not
    bound (the call will fail with ``tool-missing`` unless it appears, which is a change).
    """
    module = binding.module
    spec = AGENT_TOOLS.get(module) if module is not None else None
    if module is None or spec is None:
        return None
    declared, source = choose_tool(spec, option_value(program_args, spec.option), tool_env)
    _refuse_credentials([declared], binding.cwd)
    found = find_executable(declared, binding.cwd, binding.search_path)
    reason: str | None = None
    if found is None:
        reason = (
            f"{describe_choice(spec, declared, source)} names no executable file at bind time "
            "(relative names against the trial cwd, PATH as the worker gets it)"
        )
    else:
        binding.bind("tool", declared, found.path, found.cwd_relative, LAUNCHER_HASH_CAP)
        if _read_head(found.path, 2) == b"#!":
            # A tool that is a script (an npm-installed CLI, a venv console script) runs under
            # its shebang interpreter: bind it as the launcher's is bound.
            _bind_shebang(binding, found.path, binding.search_path)
    return ToolBinding(
        adapter=module,
        tool=spec.tool,
        declared=declared,
        source=source,
        option=spec.option,
        variable=spec.variable,
        bound=found is not None,
        path=str(found.path) if found is not None else None,
        reason=reason,
    )


def _scope(tool: ToolBinding | None) -> dict[str, Any]:
    scope = copy.deepcopy(VERIFICATION_SCOPE)
    if tool is not None and not tool.bound:
        scope["notBound"].append(
            f"the {tool.tool} executable the {tool.adapter} adapter launches: {tool.reason}"
        )
    return scope


def _tool_env(identity: WorkerIdentity) -> dict[str, str]:
    """The environment the tool was chosen from, as far as the choice depended on it."""
    tool = identity.tool
    if tool is not None and tool.source == "variable":
        return {tool.variable: tool.declared}
    return {}


def _bind(
    argv: Sequence[str],
    cwd: Path,
    operator_identity: str | None,
    search_path: list[str],
    python_path: list[str],
    tool_env: Mapping[str, str],
) -> WorkerIdentity:
    items = _check_argv(argv)
    if not _is_dir(cwd):
        raise PreflightError(f"trial cwd {cwd} is not a directory")
    cwd = Path(os.path.abspath(cwd))
    _refuse_credentials([items[0]], cwd)
    launcher_path, via, cwd_relative = _resolve_launcher(items[0], cwd, search_path)
    kind = _launcher_kind(launcher_path, items[0])
    binding = _Binding(cwd=cwd, search_path=search_path, python_path=python_path)
    st = os.stat(launcher_path)
    launcher = LauncherRecord(
        declared=items[0],
        via=via,
        path=str(launcher_path),
        resolved_target=os.path.realpath(launcher_path),
        cwd_relative=cwd_relative,
        kind=kind,
        sha256=sha256_file(launcher_path, cap=LAUNCHER_HASH_CAP),
        mode=_mode(st),
        size=st.st_size,
    )
    parsed = _parse_program(binding, items, launcher_path, kind)
    _refuse_credentials(
        [arg for i, arg in enumerate(items) if i not in parsed.inline_indices and i > 0], cwd
    )
    # The tool first: an absolute --bin is the tool (hashed up to 512 MiB), not an operand.
    tool = _bind_tool(binding, parsed.program_args, tool_env)
    _bind_file_operands(
        binding,
        [arg for i, arg in enumerate(items) if i > 0 and i not in parsed.inline_indices],
        relative=parsed.relative_operands,
    )
    return WorkerIdentity(
        declared_argv=items,
        cwd=str(cwd),
        search_path=search_path,
        python_path=python_path,
        launcher=launcher,
        bound_files=binding.files,
        inline_sources=binding.inline,
        model=ModelRequest(requested=_requested_model(parsed.program_args)),
        tool=tool,
        operator_identity=operator_identity,
        implementation_hashes=implementation_hashes(),
        verification_scope=_scope(tool),
    )


_ENV_VALUE_OPTIONS: Final = frozenset({"-u", "--unset", "-C", "--chdir"})
_ASSIGNMENT_WORD: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def _parse_program(
    binding: _Binding,
    items: Sequence[str],
    launcher_path: Path,
    kind: Literal["python", "node", "script", "binary"],
) -> _Parsed:
    """Screen and bind the arguments of ``items`` (``items[0]`` is already bound)."""
    cwd = binding.cwd
    if kind == "python":
        _refuse_credentials(_operands_outside_inline(items, "python"), cwd)
        return _parse_python(binding, items, launcher_path)
    if kind == "node":
        _refuse_credentials(_operands_outside_inline(items, "node"), cwd)
        return _parse_node(binding, items)
    if kind == "binary" and launcher_path.name == "env":
        # env [OPTION]... [NAME=VALUE]... PROGRAM [ARG]...: bind PROGRAM as env would find it.
        index = 1
        while index < len(items):
            arg = items[index]
            if arg in ("-S", "--split-string") or arg.startswith(("-S", "--split-string=")):
                raise PreflightError("env -S (split string) argv cannot be bound; list the argv")
            if arg in _ENV_VALUE_OPTIONS:
                index += 2
            elif arg.startswith("-") or ("=" in arg and not arg.startswith("=")):
                index += 1
            else:
                break
        _refuse_credentials(items[1:index], cwd)
        if index < len(items):
            _refuse_credentials([items[index]], cwd)
            search_path = binding.search_path
            for assignment in items[1:index]:
                if assignment.startswith("PATH="):
                    search_path = split_path(assignment[len("PATH=") :])
            program, _, cwd_relative = _resolve_launcher(items[index], cwd, search_path)
            binding.bind("interpreter", items[index], program, cwd_relative, LAUNCHER_HASH_CAP)
            inner = _parse_program(
                binding, items[index:], program, _launcher_kind(program, items[index])
            )
            return _Parsed(
                inner.program_args,
                frozenset(position + index for position in inner.inline_indices),
                inner.relative_operands,
            )
        return _Parsed(list(items[1:]), frozenset(), relative_operands=True)
    family = interpreter_family(
        [Path(items[0]).name, launcher_path.name, Path(os.path.realpath(launcher_path)).name]
    )
    if family is None:
        _refuse_credentials(items[1:], cwd)
    if kind == "script":
        # A wrapper script (an rbenv shim named ruby, say) binds its interpreter too.
        _bind_shebang(binding, launcher_path, binding.search_path)
    if family is not None:
        return _bind_plan(binding, items, plan_arguments(family, items))
    return _Parsed(list(items[1:]), frozenset(), relative_operands=True)


def _operands_outside_inline(items: Sequence[str], kind: str) -> list[str]:
    """The operands to screen before parsing: all but the values of inline-source flags."""
    skip: set[int] = set()
    for index, arg in enumerate(items[1:], start=1):
        if kind == "python" and arg.startswith("-") and not arg.startswith("--"):
            letters = arg[1:]
            if "c" in letters:
                position = letters.index("c")
                if all(ch not in "mWX" for ch in letters[:position]):
                    skip.add(index if letters[position + 1 :] else index + 1)
                    break
        if kind == "node" and arg.partition("=")[0] in _NODE_INLINE:
            skip.add(index if "=" in arg else index + 1)
            break
    return [arg for index, arg in enumerate(items) if index > 0 and index not in skip]


def bind_identity(
    argv: Sequence[str],
    *,
    cwd: Path,
    operator_identity: str | None,
    env: Mapping[str, str] | None = None,
) -> WorkerIdentity:
    """Bind ``argv`` as it will run in ``cwd`` with ``env`` (default: this process's environment).

    Raises :class:`UsageError` for a malformed argv, :class:`InputFileError` for a credential-like
    operand or an unresolvable launcher, and :class:`PreflightError` for anything else that
    cannot be bound (a relative script absent from the trial cwd, an unresolvable ``-m``).
    """
    environment = os.environ if env is None else env
    return _bind(
        argv,
        Path(cwd),
        operator_identity,
        split_path(environment.get("PATH", os.defpath)),
        [entry for entry in environment.get("PYTHONPATH", "").split(os.pathsep) if entry],
        environment,
    )


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
        fresh = _bind(
            identity.declared_argv,
            Path(cwd),
            identity.operator_identity,
            list(identity.search_path),
            list(identity.python_path),
            _tool_env(identity),
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
