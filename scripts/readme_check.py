"""Run the README's shell blocks in order, as written, in a fresh copy of the repository.

    python scripts/readme_check.py [--readme README.md] [--scratch DIR] [--keep] [--list]

Which blocks run:

- A fenced block whose info string is ``bash``, ``sh`` or ``shell`` is a command block. Any
  other fence (``toml``, ``json``, none) is file content or output, and is never run.
- A command block is run unless the line before its fence (blank lines aside) is one of the
  two markers:

  - ``<!-- template: WHY -->``: a pattern to adapt, not a command to paste: it needs an agent
    CLI, a hosted provider, a cluster or a program the README does not install;
  - ``<!-- not-run: WHY -->``: runnable as written, but not by this check (the whole test
    suite, which CI runs on its own line).

- Each command of a block (a line, with its ``\\`` continuations; comment lines and blank
  lines aside) must exit 0, or the code a trailing comment states: ``... # exit 1: why``.

How they run: each block is one ``bash`` script, run in the copy's root, one after the other,
so the paths one block writes are there for the next. The environment is the caller's minus
``LORELAB_*``, ``PYTHONPATH``, ``VIRTUAL_ENV`` and the display variables (no page is opened),
with the copy's ``.venv/bin`` first on ``PATH``: the ``source .venv/bin/activate`` the README
asks for before its examples. A command that exits with another code than stated fails its
block; the blocks after it are not run (they read what it should have written).

The copy holds the files git tracks, as they are in the working tree (a clone of it, with
your edits): add a new file with ``git add`` before checking. It is made in a new temporary
directory (or ``--scratch DIR``, which must not exist) and removed afterwards unless
``--keep`` is given or a block failed.

Output: one line per block, ``passed``, ``FAILED``, ``template``, ``not-run`` or ``skipped``
(after a failure), with the README line of its fence, its commands' exit codes and its
seconds. The commands' own output goes to ``block-LINE.log`` beside the copy; its last 40
lines are shown when the block fails.

Exit 0 when every run block passed, 1 when one failed, 2 for bad input (a README without
command blocks, a malformed marker or exit annotation, an existing --scratch).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

SHELLS = frozenset({"bash", "sh", "shell"})
FENCE = re.compile(r"^(?P<fence>```+|~~~+)\s*(?P<info>[^\s`]*)")
MARKER = re.compile(r"^<!--\s*(?P<kind>template|not-run)\s*(?::\s*(?P<why>.*?))?\s*-->$")
EXIT = re.compile(r"(?:^|\s)#\s*exit\s+(?P<code>\d+)\b")
ANY_MARKER = re.compile(r"^<!--\s*(template|not-run)\b")
BLOCK_TIMEOUT_S = 900
STATUS = "README_CHECK_STATUS"


class ReadmeError(Exception):
    """The README cannot be checked as it is: a malformed marker or annotation."""


@dataclass(frozen=True, slots=True)
class Command:
    """One command of a block: its text (continuations kept) and the exit code it must give."""

    text: str
    expected: int


@dataclass(frozen=True, slots=True)
class Block:
    """One command block: the README line of its fence, how it is treated, its commands."""

    line: int
    kind: str  # "run", "template" or "not-run"
    why: str | None
    commands: tuple[Command, ...]


def _marker(previous: list[str], line: int) -> tuple[str, str | None]:
    for text in reversed(previous):
        if not text.strip():
            continue
        found = MARKER.match(text.strip())
        if found is None:
            if ANY_MARKER.match(text.strip()):
                raise ReadmeError(f"line {line}: malformed marker {text.strip()!r}")
            return "run", None
        why = found["why"] or None
        if found["kind"] == "not-run" and why is None:
            raise ReadmeError(
                f"line {line}: <!-- not-run --> needs a reason: <!-- not-run: WHY -->"
            )
        return found["kind"], why
    return "run", None


def commands_of(body: list[str], line: int) -> tuple[Command, ...]:
    """The commands of a block's ``body`` lines (the fence opens on README line ``line``)."""
    commands: list[Command] = []
    pending: list[str] = []
    for offset, text in enumerate(body, start=1):
        if not pending and (not text.strip() or text.lstrip().startswith("#")):
            continue
        pending.append(text)
        if text.rstrip().endswith("\\"):
            continue
        found = EXIT.search(text)
        if found is None and re.search(r"#\s*exit\b", text, flags=re.IGNORECASE):
            raise ReadmeError(f"line {line + offset}: write the exit code as '# exit N'")
        commands.append(Command("\n".join(pending), 0 if found is None else int(found["code"])))
        pending = []
    if pending:
        raise ReadmeError(f"line {line + len(body)}: the block ends inside a continued line")
    return tuple(commands)


def extract(text: str) -> list[Block]:
    """Every command block of a README, in order."""
    lines = text.splitlines()
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        opened = FENCE.match(lines[index])
        if opened is None:
            index += 1
            continue
        fence, info = opened["fence"], opened["info"].lower()
        end = index + 1
        while end < len(lines) and not lines[end].startswith(fence):
            end += 1
        if end == len(lines):
            raise ReadmeError(f"line {index + 1}: a fence that is never closed")
        if info in SHELLS:
            kind, why = _marker(lines[:index], index + 1)
            body = lines[index + 1 : end]
            blocks.append(Block(index + 1, kind, why, commands_of(body, index + 1)))
        index = end + 1
    return blocks


def script_of(block: Block) -> str:
    """The bash script of a block: each command, then its exit code appended to $STATUS, and a
    stop at the first command whose code is not the one stated."""
    parts = []
    for command in block.commands:
        parts.append(
            f"{command.text}\n"
            f'__code=$?; echo "$__code" >> "${STATUS}"\n'
            f'[ "$__code" = {command.expected} ] || exit 1\n'
        )
    return "".join(parts)


def _tracked_copy(source: Path, target: Path) -> None:
    listed = subprocess.run(
        ["git", "-C", str(source), "ls-files", "-z", "--cached"],
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for raw in filter(None, listed):
        name = os.fsdecode(raw)
        path = source / name
        if not path.is_file() and not path.is_symlink():
            continue  # deleted in the working tree
        destination = target / name
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, destination, follow_symlinks=False)


def _environment(root: Path) -> dict[str, str]:
    dropped = {"PYTHONPATH", "VIRTUAL_ENV", "DISPLAY", "WAYLAND_DISPLAY", "BROWSER"}
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in dropped and not key.startswith("LORELAB_")
    }
    venv = root / ".venv"
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', os.defpath)}"
    env["VIRTUAL_ENV"] = str(venv)
    return env


def run_block(
    block: Block, root: Path, env: dict[str, str], log: Path | None = None
) -> tuple[bool, list[int], float]:
    """Run one block in ``root``: (passed, its commands' exit codes, seconds). Its output goes
    to ``log`` (else to this process's own)."""
    status = root.parent / f".readme-check-status-{block.line}"
    status.unlink(missing_ok=True)
    started = time.monotonic()
    with open(log, "wb") if log is not None else open(os.devnull, "wb") as out:
        process = subprocess.Popen(
            ["bash", "-c", script_of(block)],
            cwd=root,
            env={**env, STATUS: str(status)},
            stdin=subprocess.DEVNULL,
            stdout=out if log is not None else None,
            stderr=subprocess.STDOUT if log is not None else None,
            start_new_session=True,
        )
        code = _wait(process)
    seconds = time.monotonic() - started
    codes = [int(v) for v in status.read_text().split()] if status.exists() else []
    status.unlink(missing_ok=True)
    passed = code == 0 and len(codes) == len(block.commands)
    return passed, codes, seconds


def _wait(process: subprocess.Popen[bytes]) -> int:
    """The block's exit code (-1 past the timeout); anything it left running is killed."""
    try:
        code = process.wait(timeout=BLOCK_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        code = -1
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # anything the block left running
    return code


def _summary(block: Block) -> str:
    first = " ".join(block.commands[0].text.split()) if block.commands else ""
    return first if len(first) <= 60 else first[:57] + "..."


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--readme", type=Path, default=Path(__file__).parents[1] / "README.md")
    parser.add_argument("--scratch", type=Path, default=None, help="a new directory to run in")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    parser.add_argument("--list", action="store_true", help="list the blocks, run nothing")
    args = parser.parse_args(argv)
    try:
        blocks = extract(args.readme.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ReadmeError) as exc:
        print(f"readme_check: {args.readme}: {exc}", file=sys.stderr)
        return 2
    if not any(block.kind == "run" for block in blocks):
        print(f"readme_check: {args.readme}: no command block to run", file=sys.stderr)
        return 2
    if args.list:
        for block in blocks:
            expected = " ".join(str(c.expected) for c in block.commands)
            print(f"{block.kind:<8} line {block.line:<4} exit {expected:<12} {_summary(block)}")
        return 0
    if args.scratch is not None and args.scratch.exists():
        print(f"readme_check: --scratch {args.scratch}: already exists", file=sys.stderr)
        return 2
    top = args.scratch or Path(tempfile.mkdtemp(prefix="readme-check-"))
    root = top / "clone"
    root.mkdir(parents=True)
    _tracked_copy(args.readme.resolve().parent, root)
    env = _environment(root)
    failed = False
    total = time.monotonic()
    for block in blocks:
        where = f"line {block.line:<4}"
        if block.kind != "run":
            print(f"{block.kind:<8} {where} ({block.why or 'a pattern to adapt'})", flush=True)
            continue
        if failed:
            print(f"skipped  {where} (after a failure) {_summary(block)}", flush=True)
            continue
        log = top / f"block-{block.line}.log"
        passed, codes, seconds = run_block(block, root, env, log)
        expected = " ".join(str(c.expected) for c in block.commands)
        shown = " ".join(map(str, codes)) or "none"
        verdict = "passed" if passed else "FAILED"
        note = "" if passed else f" (expected exit {expected})"
        print(f"{verdict:<8} {where} exit {shown:<12} {seconds:6.1f} s  {_summary(block)}{note}")
        if not passed:
            tail = log.read_text(encoding="utf-8", errors="replace").splitlines()[-40:]
            print("\n".join(f"    | {line}" for line in tail), flush=True)
        failed = failed or not passed
    print(f"readme_check: {time.monotonic() - total:.1f} s in {shlex.quote(str(root))}")
    if failed or args.keep:
        print(f"readme_check: kept {top}", file=sys.stderr)
    else:
        shutil.rmtree(top)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
