"""The Node argv grammar: ``-e``/``-p`` source, the entrypoint, ``--require``/``--import``."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from lorelab.errors import InputFileError, JSONInputError, PreflightError, UsageError
from lorelab.io import SCRIPT_HASH_CAP, loads_strict, read_bounded
from lorelab.workers.identity._credentials import refuse_credentials
from lorelab.workers.identity._files import Binding, Parsed, is_dir, is_file, is_under, not_a_file
from lorelab.workers.identity._grammar import option_at, program_at

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
NODE_INLINE: Final = frozenset({"-e", "--eval", "-p", "--print"})
_NODE_PRELOAD: Final = frozenset(
    {"-r", "--require", "--import", "--loader", "--experimental-loader"}
)
_NODE_SUFFIXES: Final = ("", ".js", ".cjs", ".mjs", "/index.js")


def _node_package_entry(specifier: str, cwd: Path) -> Path | None:
    name_parts = specifier.split("/")
    package = "/".join(name_parts[:2]) if specifier.startswith("@") else name_parts[0]
    subpath = specifier[len(package) :].lstrip("/")
    for base in [cwd, *cwd.parents]:
        root = base / "node_modules" / package
        if not is_dir(root):
            continue
        if subpath:
            return _node_file(root / subpath)
        main = "index.js"
        manifest = root / "package.json"
        if is_file(manifest):
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
        if is_file(candidate):
            return candidate
    return None


def _bind_node_preload(binding: Binding, specifier: str) -> None:
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
        "preload", specifier, found, cwd_relative and is_under(found, binding.cwd), SCRIPT_HASH_CAP
    )


def parse_node(binding: Binding, argv: Sequence[str]) -> Parsed:
    index = 1
    inline: set[int] = set()
    while (arg := option_at(argv, index, "node")) is not None:
        name, has_value, attached = arg.partition("=")
        if name in _NODE_VALUE_OPTIONS:
            if has_value:
                value, consumed, value_index = attached, 1, index
            elif index + 1 < len(argv):
                value, consumed, value_index = argv[index + 1], 2, index + 1
            else:
                raise UsageError(f"worker argv: node {name} needs an argument")
            if name in NODE_INLINE:
                binding.inline_source(name, value)
                inline.add(value_index)
                return Parsed(list(argv[index + consumed :]), frozenset(inline))
            if name in _NODE_PRELOAD:
                refuse_credentials([value], binding.cwd)
                _bind_node_preload(binding, value)
            index += consumed
            continue
        index += 1
    index = program_at(argv, index, "node", "entrypoint or -e/-p source")
    entry = argv[index]
    base = Path(entry) if os.path.isabs(entry) else binding.cwd / entry
    found = _node_file(base)
    if found is None:
        raise PreflightError(not_a_file("node entrypoint", entry, base, binding.cwd))
    binding.bind("entrypoint", entry, found, not os.path.isabs(entry), SCRIPT_HASH_CAP)
    return Parsed(list(argv[index + 1 :]), frozenset())
