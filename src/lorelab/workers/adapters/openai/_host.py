"""The agentless host: the model proposes search/replace edits, lorelab applies and verifies.

One host call (``lorelab.openai-host/1``):

1. Collect the relevant files of the working directory (the disposable copy), bounded in count
   and bytes: the files the task, the guidance or the last verification output name, best
   named first (only when they name none, the project's files in path order).
   Dot-directories (``.git``, ``.lorelab``), ``__pycache__``, ``node_modules``, binary and
   oversized files are never read.
2. Ask for ``{"summary", "edits": [{"path", "search", "replace"}]}``, with the task, the
   guidance the payload carries (none in the baseline condition: the runner sends none) and the
   last verification output.
3. Apply the edits: each ``search`` must occur exactly once in an existing file under the
   directory (an empty ``search`` creates a new file); a call's edits to one file apply in order.
4. After an edit that changed a file, run ``task.verify`` (argv split with shlex, no shell, own
   process group, the key's variable removed from its environment) and record the cycle
   ``{edited, verification: {command, exitCode}}``. Stop when it passes; otherwise feed its
   output back and go again, up to ``--host-attempts`` rounds within the call's time budget.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from lorelab.io import run_bounded
from lorelab.workers.adapters._agent import Answer, Request
from lorelab.workers.adapters.openai._chat import parse_answer, role_schema
from lorelab.workers.adapters.openai._worker import DEFAULT_KEY_VARIABLE, Session

HOST_PROMPT_VERSION: Final = "lorelab.openai-host/1"
MAX_FILE_BYTES: Final = 64 * 1024
MAX_LISTED_FILES: Final = 2_000
FEEDBACK_CHARS: Final = 2_000
VERIFY_OUTPUT_LIMIT: Final = 1024 * 1024
SKIPPED_DIRS: Final = frozenset({"__pycache__", "node_modules"})

HOST_PROMPT: Final = f"""\
You fix code ({HOST_PROMPT_VERSION}). Below are a task, the project's relevant files and the
output of the task's verification command. Reply with one JSON object:
{{"summary": "<what you changed>", "edits": [{{"path": "<file>", "search": "<exact text now in
the file>", "replace": "<the new text>"}}]}}
Rules: `search` must be copied exactly from the file and occur in it once; keep edits small; an
empty `search` creates a new file. Do not edit the tests unless the task says so.
"""


@dataclass(frozen=True, slots=True)
class SourceFile:
    """One file shown to the model."""

    path: str
    text: str


def _listing(root: Path) -> list[str]:
    found: list[str] = []
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED_DIRS)
        base = Path(directory)
        for name in sorted(files):
            path = base / name
            if name.startswith(".") or path.is_symlink() or not path.is_file():
                continue
            found.append(path.relative_to(root).as_posix())
            if len(found) >= MAX_LISTED_FILES:
                return found
    return found


def _read_text(path: Path) -> str | None:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    if b"\x00" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _score(path: str, texts: Sequence[str]) -> int:
    name = path.rsplit("/", 1)[-1]
    stem = name.rsplit(".", 1)[0]
    module = path.rsplit(".", 1)[0].replace("/", ".")
    score = 0
    for text in texts:
        if path in text:
            score += 8
        elif name in text or module in text:
            score += 4
        elif len(stem) > 3 and stem in text:
            score += 1
    return score


def relevant_files(
    root: Path, texts: Sequence[str], *, max_files: int, max_bytes: int
) -> list[SourceFile]:
    """The files to show, within the count and byte bounds: the files the texts name, best
    named first; only when they name none, the project's files in path order."""
    scored = [(-_score(path, texts), path) for path in _listing(root)]
    named = sorted(item for item in scored if item[0] < 0)
    ranked = [path for _, path in (named or sorted(scored))]
    chosen: list[SourceFile] = []
    used = 0
    for path in ranked:
        if len(chosen) >= max_files:
            break
        text = _read_text(root / path)
        if text is None:
            continue
        size = len(text.encode("utf-8"))
        if used + size > max_bytes:
            continue
        chosen.append(SourceFile(path, text))
        used += size
    return chosen


def host_prompt(
    payload: dict[str, Any], files: Sequence[SourceFile], feedback: str, attempt: int
) -> str:
    """The host prompt of one round: rules, task, guidance (if any), files, verify output."""
    task = payload.get("task") or {}
    parts = [HOST_PROMPT, f"Task:\n{task.get('prompt', '')}\n"]
    guidance = payload.get("guidance")
    if isinstance(guidance, dict) and guidance.get("text"):
        parts.append(f"Guidance from memory ({guidance.get('kind')}):\n{guidance['text']}\n")
    for entry in files:
        parts.append(f"File {entry.path}:\n```\n{entry.text}\n```\n")
    if feedback:
        parts.append(f"Verification output (round {attempt}):\n{feedback}\n")
    return "\n".join(parts)


def _safe_path(root: Path, relative: str) -> Path | None:
    if not relative or relative.startswith("/") or "\\" in relative or "\x00" in relative:
        return None
    parts = relative.split("/")
    if any(part in ("", ".", "..") or part.startswith(".") for part in parts):
        return None
    path = root.joinpath(*parts)
    for parent in [root.joinpath(*parts[:i]) for i in range(1, len(parts) + 1)]:
        if parent.is_symlink():
            return None
    return path


def apply_edits(root: Path, edits: Sequence[Any]) -> tuple[list[str], list[str]]:
    """Apply each edit that fits; the files changed, and one problem line per edit refused."""
    changed: list[str] = []
    problems: list[str] = []
    for index, edit in enumerate(edits, start=1):
        if not isinstance(edit, dict):
            problems.append(f"edit {index}: not an object")
            continue
        relative = str(edit.get("path", ""))
        search, replace = str(edit.get("search", "")), str(edit.get("replace", ""))
        path = _safe_path(root, relative)
        if path is None:
            problems.append(f"edit {index}: {relative!r} is not a file path inside the project")
            continue
        if not search:
            if path.exists():
                problems.append(f"edit {index}: {relative} exists; an empty search creates files")
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(replace, encoding="utf-8")
            changed.append(relative)
            continue
        text = _read_text(path) if path.is_file() else None
        if text is None:
            problems.append(f"edit {index}: {relative} is not a text file of the project")
            continue
        count = text.count(search)
        if count != 1:
            problems.append(f"edit {index}: the search text occurs {count} times in {relative}")
            continue
        updated = text.replace(search, replace)
        if updated != text:
            path.write_text(updated, encoding="utf-8")
            changed.append(relative)
    return sorted(set(changed)), problems


def _verify_env(request: Request) -> dict[str, str]:
    env = dict(os.environ)
    env.pop(DEFAULT_KEY_VARIABLE, None)
    if request.options.api_key_env:
        env.pop(request.options.api_key_env, None)
    return env


def run_verify(request: Request, session: Session, command: str) -> tuple[int | None, str]:
    """Run the verify command in the copy; its exit code (None: did not finish) and output."""
    timeout = session.remaining_s()
    if timeout < 1:
        return None, "no time left to run the verification"
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        return None, f"the verify command cannot be split: {exc}"
    if not argv:
        return None, "the verify command is empty"
    result = run_bounded(
        argv,
        cwd=request.cwd,
        input_bytes=None,
        timeout_s=timeout,
        max_stdout=VERIFY_OUTPUT_LIMIT,
        env=_verify_env(request),
        new_session=True,
    )
    output = (result.stdout + result.output_tail).decode("utf-8", "replace")
    if not result.spawned:
        return None, f"cannot start the verify command: {result.spawn_error}"
    if result.timed_out:
        return None, output[-FEEDBACK_CHARS:] + "\n(timed out)"
    return result.exit_code, output[-FEEDBACK_CHARS:]


def _texts(payload: dict[str, Any], feedback: str) -> list[str]:
    task = payload.get("task") or {}
    guidance = payload.get("guidance") or {}
    return [str(task.get("prompt", "")), str(guidance.get("text", "")), feedback]


def answer_host(request: Request, session: Session) -> Answer:
    """Run the loop (see the module docstring) and report its cycles."""
    payload, options = request.payload, request.options
    task = payload.get("task") or {}
    verify = task.get("verify")
    last = payload.get("lastVerification") or {}
    feedback = str(last.get("outputTail", "")) if last.get("exitCode") not in (0, None) else ""
    schema = role_schema("host", payload)
    cycles: list[dict[str, Any]] = []
    commands: list[dict[str, Any]] = []
    summaries: list[str] = []
    for attempt in range(1, max(1, options.host_attempts) + 1):
        files = relevant_files(
            request.cwd,
            _texts(payload, feedback),
            max_files=options.host_max_files,
            max_bytes=options.host_context_bytes,
        )
        prompt = host_prompt(payload, files, feedback[-FEEDBACK_CHARS:], attempt)
        completion = session.complete("host", prompt, schema)
        value = parse_answer(completion.text, completion, fenced=session.settings.dialect == "none")
        edits = value.get("edits")
        edited, problems = apply_edits(request.cwd, edits if isinstance(edits, list) else [])
        summaries.append(str(value.get("summary", ""))[:500] or "(no summary)")
        if problems:
            summaries.append("; ".join(problems)[:500])
        if not edited or not isinstance(verify, str):
            feedback = "No edit was applied: " + ("; ".join(problems) or "the reply had none")
            continue
        exit_code, output = run_verify(request, session, verify)
        verification = {"command": verify, "exitCode": exit_code}
        commands.append(verification)
        cycles.append({"edited": edited, "verification": verification})
        if exit_code == 0:
            break
        feedback = output
        if session.remaining_s() < 5:
            break
    response = {"summary": " | ".join(summaries)[:4000], "commands": commands, "cycles": cycles}
    notes = [f"{HOST_PROMPT_VERSION}: {len(cycles)} cycle(s); {session.describe()}"]
    return Answer(response=response, usage=session.usage, model=session.model, notes=notes)
