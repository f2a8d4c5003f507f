"""``bind_identity``: which files a worker argv will run, hashed before anything runs."""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Literal

import lorelab
from lorelab.errors import PreflightError, UsageError
from lorelab.io import LAUNCHER_HASH_CAP, SCRIPT_HASH_CAP
from lorelab.workers._tools import (
    AGENT_TOOLS,
    choose_tool,
    describe_choice,
    find_executable,
    option_value,
    split_path,
)
from lorelab.workers.identity._cache import file_sha256
from lorelab.workers.identity._credentials import refuse_credentials
from lorelab.workers.identity._endpoint import bind_endpoint
from lorelab.workers.identity._files import (
    Binding,
    Parsed,
    bind_file_operands,
    bind_shebang,
    hash_file,
    is_dir,
    mode_bits,
    read_head,
    resolve_launcher,
)
from lorelab.workers.identity._grammar import interpreter_family, plan_arguments
from lorelab.workers.identity._models import (
    VERIFICATION_SCOPE,
    LauncherRecord,
    ModelRequest,
    ToolBinding,
    WorkerIdentity,
)
from lorelab.workers.identity._node import NODE_INLINE, parse_node
from lorelab.workers.identity._python import parse_python
from lorelab.workers.identity._shell import bind_plan

_PYTHON_NAME: Final = re.compile(r"(?:python|pypy)(?:\d+(?:\.\d+)?)?[a-z]?")
_NODE_NAMES: Final = frozenset({"node", "nodejs"})
_ENV_VALUE_OPTIONS: Final = frozenset({"-u", "--unset", "-C", "--chdir"})


DATA_OF_TEST_DOUBLES: Final = "testing"
"""The package folder of the shipped test doubles (the fixture worker and host, the MemCoder
stand-in): every file in it is implementation, the data they answer from included."""


def _implementation_files(directory: str, parts: tuple[str, ...]) -> list[tuple[str, ...]]:
    """Every entry named ``*.py`` under ``directory`` as relative parts (as ``rglob("*.py")``
    finds them: symbolic links to directories are not followed), and every other regular file
    under the test doubles' folder (:data:`DATA_OF_TEST_DOUBLES`)."""
    found: list[tuple[str, ...]] = []
    with os.scandir(directory) as scan:
        entries = list(scan)
    doubles = bool(parts) and parts[0] == DATA_OF_TEST_DOUBLES
    for entry in entries:
        if entry.name.endswith(".py") or (
            doubles and entry.is_file(follow_symlinks=False) and "__pycache__" not in parts
        ):
            found.append((*parts, entry.name))
        if entry.is_dir(follow_symlinks=False):
            found += _implementation_files(entry.path, (*parts, entry.name))
    return found


def implementation_hashes() -> dict[str, str]:
    """SHA-256 of every ``.py`` module of the installed lorelab package (adapters included)
    and of the data files its shipped test doubles answer from (``lorelab/testing/``).

    Listed afresh on every call (a module added or removed is seen); a module whose status
    has not changed keeps its hash (:mod:`lorelab.workers.identity._cache`)."""
    root = Path(lorelab.__file__).resolve().parent
    outside = "__pycache__" in root.parts
    hashes: dict[str, str] = {}
    for parts in sorted(_implementation_files(str(root), ())):
        if outside or "__pycache__" in parts:
            continue
        hashes["lorelab/" + "/".join(parts)] = file_sha256(
            os.path.join(root, *parts), cap=SCRIPT_HASH_CAP
        )
    return hashes


def launcher_kind(path: Path, declared: str) -> Literal["python", "node", "script", "binary"]:
    names = {Path(declared).name, path.name, Path(os.path.realpath(path)).name}
    if any(_PYTHON_NAME.fullmatch(name) for name in names):
        return "python"
    if names & _NODE_NAMES:
        return "node"
    if read_head(path).startswith(b"#!"):
        return "script"
    return "binary"


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
    binding: Binding, program_args: Sequence[str], tool_env: Mapping[str, str]
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
    refuse_credentials([declared], binding.cwd)
    found = find_executable(declared, binding.cwd, binding.search_path)
    reason: str | None = None
    if found is None:
        reason = (
            f"{describe_choice(spec, declared, source)} names no executable file at bind time "
            "(relative names against the trial cwd, PATH as the worker gets it)"
        )
    else:
        binding.bind("tool", declared, found.path, found.cwd_relative, LAUNCHER_HASH_CAP)
        if read_head(found.path, 2) == b"#!":
            # A tool that is a script (an npm-installed CLI, a venv console script) runs under
            # its shebang interpreter: bind it as the launcher's is bound.
            bind_shebang(binding, found.path, binding.search_path)
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


def bind_argv(
    argv: Sequence[str],
    cwd: Path,
    operator_identity: str | None,
    search_path: list[str],
    python_path: list[str],
    tool_env: Mapping[str, str],
) -> WorkerIdentity:
    items = _check_argv(argv)
    if not is_dir(cwd):
        raise PreflightError(f"trial cwd {cwd} is not a directory")
    cwd = Path(os.path.abspath(cwd))
    refuse_credentials([items[0]], cwd)
    launcher_path, via, cwd_relative = resolve_launcher(items[0], cwd, search_path)
    kind = launcher_kind(launcher_path, items[0])
    binding = Binding(cwd=cwd, search_path=search_path, python_path=python_path)
    st = os.stat(launcher_path)
    launcher = LauncherRecord(
        declared=items[0],
        via=via,
        path=str(launcher_path),
        resolved_target=os.path.realpath(launcher_path),
        cwd_relative=cwd_relative,
        kind=kind,
        sha256=hash_file(launcher_path, cap=LAUNCHER_HASH_CAP),
        mode=mode_bits(st),
        size=st.st_size,
    )
    parsed = _parse_program(binding, items, launcher_path, kind)
    refuse_credentials(
        [arg for i, arg in enumerate(items) if i not in parsed.inline_indices and i > 0], cwd
    )
    # The tool first: an absolute --bin is the tool (hashed up to 512 MiB), not an operand.
    tool = _bind_tool(binding, parsed.program_args, tool_env)
    # Before the operands: the model file is bound whole (kind model), not as an 8 MiB operand.
    endpoint = bind_endpoint(binding, parsed.program_args)
    bind_file_operands(
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
        endpoint=endpoint,
        operator_identity=operator_identity,
        implementation_hashes=implementation_hashes(),
        verification_scope=_scope(tool),
    )


def _parse_program(
    binding: Binding,
    items: Sequence[str],
    launcher_path: Path,
    kind: Literal["python", "node", "script", "binary"],
) -> Parsed:
    """Screen and bind the arguments of ``items`` (``items[0]`` is already bound)."""
    cwd = binding.cwd
    if kind == "python":
        refuse_credentials(_operands_outside_inline(items, "python"), cwd)
        return parse_python(binding, items, launcher_path)
    if kind == "node":
        refuse_credentials(_operands_outside_inline(items, "node"), cwd)
        return parse_node(binding, items)
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
        refuse_credentials(items[1:index], cwd)
        if index < len(items):
            refuse_credentials([items[index]], cwd)
            search_path = binding.search_path
            for assignment in items[1:index]:
                if assignment.startswith("PATH="):
                    search_path = split_path(assignment[len("PATH=") :])
            program, _, cwd_relative = resolve_launcher(items[index], cwd, search_path)
            binding.bind("interpreter", items[index], program, cwd_relative, LAUNCHER_HASH_CAP)
            inner = _parse_program(
                binding, items[index:], program, launcher_kind(program, items[index])
            )
            return Parsed(
                inner.program_args,
                frozenset(position + index for position in inner.inline_indices),
                inner.relative_operands,
            )
        return Parsed(list(items[1:]), frozenset(), relative_operands=True)
    family = interpreter_family(
        [Path(items[0]).name, launcher_path.name, Path(os.path.realpath(launcher_path)).name]
    )
    if family is None:
        refuse_credentials(items[1:], cwd)
    if kind == "script":
        # A wrapper script (an rbenv shim named ruby, say) binds its interpreter too.
        bind_shebang(binding, launcher_path, binding.search_path)
    if family is not None:
        return bind_plan(binding, items, plan_arguments(family, items))
    return Parsed(list(items[1:]), frozenset(), relative_operands=True)


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
        if kind == "node" and arg.partition("=")[0] in NODE_INLINE:
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
    return bind_argv(
        argv,
        Path(cwd),
        operator_identity,
        split_path(environment.get("PATH", os.defpath)),
        [entry for entry in environment.get("PYTHONPATH", "").split(os.pathsep) if entry],
        environment,
    )


def _requested_model(program_args: Sequence[str]) -> str | None:
    for index, arg in enumerate(program_args):
        if arg.startswith("--model="):
            return arg.split("=", 1)[1] or None
        if arg in ("--model", "-m") and index + 1 < len(program_args):
            return program_args[index + 1]
    return None
