"""The Python argv grammar: ``-c`` source, ``-m`` modules (found as Python would), scripts."""

from __future__ import annotations

import importlib.machinery
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from lorelab.errors import PreflightError, UsageError
from lorelab.io import SCRIPT_HASH_CAP
from lorelab.workers.identity._credentials import refuse_credentials
from lorelab.workers.identity._files import Binding, Parsed, is_dir, is_file, is_under
from lorelab.workers.identity._grammar import option_at, program_at


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
    binding: Binding, module: str, launcher: Path, isolated: bool, safe_path: bool, no_env: bool
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
                is_under(Path(spec.origin), binding.cwd),
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
                is_under(Path(main.origin), binding.cwd),
                SCRIPT_HASH_CAP,
            )


def parse_python(binding: Binding, argv: Sequence[str], launcher: Path) -> Parsed:
    isolated = safe_path = no_env = False
    index = 1
    while (arg := option_at(argv, index, "python")) is not None:
        if arg.startswith("--"):
            index += 2 if arg == "--check-hash-based-pycs" else 1
            continue
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
                    return Parsed(list(argv[index + consumed :]), frozenset(inline))
                if flag == "m":
                    refuse_credentials([value], binding.cwd)
                    _bind_module(binding, value, launcher, isolated, safe_path, no_env)
                    binding.module = value
                    return Parsed(list(argv[index + consumed :]), frozenset())
                break
            isolated = isolated or flag == "I"
            safe_path = safe_path or flag == "P"
            no_env = no_env or flag == "E"
            position += 1
        index += consumed
    index = program_at(argv, index, "python", "script, -m module or -c source")
    script = argv[index]
    if script == "-":
        raise PreflightError(
            "python '-' reads its program from stdin, where lorelab writes the payload"
        )
    base = Path(script) if os.path.isabs(script) else binding.cwd / script
    main = base / "__main__.py"
    if is_dir(base) and is_file(main):
        # Python runs a directory operand's __main__.py, as it runs a package's with -m.
        binding.bind(
            "script",
            f"{script.rstrip('/')}/__main__.py",
            main,
            not os.path.isabs(script),
            SCRIPT_HASH_CAP,
        )
        return Parsed(list(argv[index + 1 :]), frozenset())
    path, cwd_relative = binding.relative(script, "python script")
    binding.bind("script", script, path, cwd_relative, SCRIPT_HASH_CAP)
    return Parsed(list(argv[index + 1 :]), frozenset())
