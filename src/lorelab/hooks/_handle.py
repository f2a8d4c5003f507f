"""``lorelab hooks run EVENT``: read one agent hook payload, act on the memory, answer the agent.

What each action does:

- ``session_start``: a brief for the project's open work; after a compaction or a resume, also
  the newest checkpoint of this session (lorelab's recover).
- ``prompt``: a brief for the prompt, only when one clears the relevance floor; the checkpoint
  too when a compaction happened and the agent has no post-compaction start event.
- ``tool``/``tool_failed``: a shell command and its exit status, or the files an edit touched,
  appended to the session journal (redacted, bounded).
- ``pre_compact``: a durable checkpoint from the journal and the transcript.
- ``stop``/``end``: an experience proposed from the journal, recorded as verified only when a
  verification command passed after the session's last edit.

A project's ``.lorelab`` that lorelab did not make for this user (a clone's, another user's)
is not used: nothing is added, nothing written there (``lorelab._state``; ``hooks trust``).

Nothing here blocks the agent: a wrong payload, an active evaluation lock or any failure is one
line in ``<home>/hooks.log``, nothing added, and exit 0. Nothing is sent over the network.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import sys
from pathlib import Path
from typing import Any

from lorelab.hooks._agents import AGENTS, AgentSpec, EventSpec
from lorelab.hooks._answer import Served, answer
from lorelab.hooks._journal import (
    REDACT_WINDOW,
    Journal,
    bounded,
    create_home,
    log_line,
    session_file,
)
from lorelab.hooks._payload import (
    Payload,
    WrongShape,
    edited_files,
    exit_code,
    is_no_project,
    last_assistant_text,
    parse,
)
from lorelab.memory._project import DEFAULT_DIRNAME, find_project

_VERIFY = re.compile(
    r"(^|[\s;&|(/])(pytest|py\.test|tox|nox|unittest|jest|vitest|mocha|ctest|rspec|phpunit"
    r"|node\s+--test|(npm|pnpm|yarn)\s+(run\s+)?test|go\s+test|cargo\s+test|make\s+(test|check)"
    r"|mvn\s+(\S+\s+)*test|gradle\w*\s+test|dotnet\s+test)(?=$|[\s;&|)])"
)


def run_hook(
    agent_name: str,
    event: str,
    raw: bytes,
    environ: dict[str, str],
    *,
    served: Served | None = None,
) -> str:
    """Handle one hook call and return what to print on stdout. Never raises.

    ``served``: the call came to ``lorelab serve`` from a hook, which read the transcript
    itself; no path the payload names is opened here."""
    agent = AGENTS[agent_name]
    spec = agent.event(event)
    # Agents run hooks in the project directory: a payload that cannot be trusted to name
    # one is logged there.
    fallback_home = _log_home(_process_cwd(), environ)
    if spec is None:
        _log_to(fallback_home, f"{agent_name} {event}: not an event lorelab handles; ignored")
        return answer(agent, event, None)
    try:
        payload = parse(spec, raw, environ)
    except WrongShape as exc:
        _log_to(fallback_home, f"{agent_name} {event}: wrong shape, nothing added: {exc}")
        return answer(agent, event, None)
    if is_no_project(payload.project):
        # The filesystem root is no project: nothing is journaled, and no .lorelab is made.
        _log_to(
            _log_home(payload.project, environ),
            f"{agent_name} {event}: cwd {str(payload.project)!r} is no project; nothing added",
        )
        return answer(agent, event, None)
    home = _home_for(payload.project, environ)
    try:
        refused = None if environ.get("LORELAB_HOME") else _untrusted(home)
        if refused is not None:
            _refuse_untrusted(f"{agent_name} {event}: {refused}; nothing added or recorded")
            return answer(agent, event, None)
        context = _Session(agent, spec, payload, home, served).handle()
    # The hook's own top-level handler: the agent must never be blocked or slowed by a bug or
    # a damaged store here, so any failure becomes one log line and an empty answer.
    except Exception as exc:
        log_line(home, f"{agent_name} {event}: failed, nothing added: {type(exc).__name__}: {exc}")
        return answer(agent, event, None)
    return answer(agent, event, context)


def _home_for(project: Path, environ: dict[str, str]) -> Path:
    # The agent's cwd may be a subdirectory: the project's store is found as every command
    # finds it (the nearest .lorelab above, else the repository root).
    configured = environ.get("LORELAB_HOME")
    return Path(configured) if configured else find_project(project) / DEFAULT_DIRNAME


def _untrusted(home: Path) -> str | None:
    """Why the project's memory home may not be used (``None``: trusted, or made now)."""
    from lorelab._state import untrusted_reason

    if not os.path.lexists(home):
        create_home(home)
    return untrusted_reason(home)


def _refuse_untrusted(message: str) -> None:
    """Say so where only the user looks: the state directory's log and stderr, never the
    untrusted home."""
    from lorelab._state import NotPrivate, private_dir

    with contextlib.suppress(NotPrivate):
        log_line(private_dir(create=True), message)
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(f"lorelab: {' '.join(message.split())}\n")


def _process_cwd() -> Path | None:
    try:
        return Path.cwd()
    except OSError:
        return None  # the directory the agent started the hook in is gone


def _log_home(project: Path | None, environ: dict[str, str]) -> Path | None:
    """Where to log about ``project``: never a new .lorelab in the filesystem root."""
    if environ.get("LORELAB_HOME"):
        return Path(environ["LORELAB_HOME"])
    if project is None or is_no_project(project):
        return None
    return find_project(project) / DEFAULT_DIRNAME


def _log_to(home: Path | None, message: str) -> None:
    if home is not None:
        log_line(home, message)


def _scope(session_id: str) -> str:
    return f"session:{session_id}"


def is_verification(command: str) -> bool:
    """True when ``command`` runs a test suite (what counts as verifying an edit)."""
    return _VERIFY.search(command) is not None


class _Session:
    """One hook call against one session's journal and the project's memory."""

    def __init__(
        self,
        agent: AgentSpec,
        spec: EventSpec,
        payload: Payload,
        home: Path,
        served: Served | None = None,
    ) -> None:
        self.served = served
        self.agent = agent
        self.spec = spec
        self.payload = payload
        self.home = home
        self.journal = Journal(session_file(home, payload.session_id))
        self.store_file = home / "memory.db"

    def _log(self, message: str) -> None:
        log_line(self.home, f"{self.agent.name} {self.spec.event}: {message}")

    def handle(self) -> str | None:
        lock = self._active_lock()
        if lock is not None:
            self._log(f"evaluation lock {lock!r} is active: nothing injected or recorded")
            return None
        action = self.spec.action
        if action == "session_start":
            return self._session_start()
        if action == "prompt":
            return self._prompt()
        if action in ("tool", "tool_failed"):
            self._tool(failed=action == "tool_failed")
            return None
        if action == "pre_compact":
            self._pre_compact()
            return None
        self._stop()
        return None

    # ------------------------------------------------------------ memory access

    def _active_lock(self) -> str | None:
        if not self.store_file.exists():
            return None
        from lorelab.memory._lock_probe import ProbeFailed, active_lock

        try:
            return active_lock(self.store_file)
        except ProbeFailed:
            pass  # read through the store below
        from lorelab.memory import LocksRequest, open_store

        store = open_store(self.home, create=False)
        try:
            locks = store.evaluation_locks(LocksRequest()).locks
            active = [lock.evaluation_id for lock in locks if lock.active]
        finally:
            store.close()
        return active[0] if active else None

    def _brief(self, task: str) -> str | None:
        from lorelab.memory import PrepareRequest, open_store

        if not self.store_file.exists():
            return None
        store = open_store(self.home, create=False)
        try:
            brief = store.prepare(
                PrepareRequest(task=bounded(task), project=self.payload.project.name)
            )
        finally:
            store.close()
        return None if brief.empty else brief.text

    def _operation(self, name: str, request: Any) -> Any:
        """Run the memory operation ``name`` (from the table MCP and the CLI are built from)."""
        from lorelab.memory import OPERATIONS, Target, open_store

        (operation,) = [entry for entry in OPERATIONS if entry.name == name]
        target = Target(
            store=lambda: open_store(self.home),
            home=lambda: self.home,
            project_dir=lambda: self.payload.project,
        )
        return operation.handler(target, request)

    def _recover(self, session_id: str) -> tuple[str, str] | None:
        from lorelab.memory import RecoverRequest, RecoverResult

        found = self._operation("recover", RecoverRequest(scope=_scope(session_id)))
        assert isinstance(found, RecoverResult)
        if not found.found or found.checkpoint is None or found.handoff_brief is None:
            return None
        return str(found.checkpoint.get("id")), found.handoff_brief

    def _redacted_bounded(self, text: str) -> str:
        """``text`` redacted, then cut to the journal's limit: a cut never splits a secret.

        Only the first :data:`REDACT_WINDOW` characters are redacted (the cut keeps 2,000), so a
        1 MiB command costs a hook milliseconds, not most of a second; a secret would have to be
        longer than the window to reach past it.
        """
        return bounded(self._redact(text[:REDACT_WINDOW]))

    def _redact(self, text: str) -> str:
        from lorelab.memory import redact

        redacted, _counts = redact(text)
        return redacted

    # ------------------------------------------------------------ journal views

    def _entries(self) -> list[dict[str, Any]]:
        return self.journal.entries()

    def _latest_file(self) -> Path:
        return self.home / "hooks" / "latest.json"

    def _remember_latest(self, **fields: str) -> None:
        path = self._latest_file()
        data = {}
        if path.exists():
            try:
                loaded = json.loads(path.read_text(encoding="utf-8"))
                data = loaded if isinstance(loaded, dict) else {}
            except (OSError, json.JSONDecodeError):
                data = {}
        data.update({"session": self.payload.session_id, **fields})
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        temp = path.with_suffix(".tmp")
        descriptor = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            json.dump(data, out)
        os.replace(temp, path)

    def _latest(self) -> dict[str, str]:
        try:
            loaded = json.loads(self._latest_file().read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            return {}
        return (
            {k: v for k, v in loaded.items() if isinstance(v, str)}
            if isinstance(loaded, dict)
            else {}
        )

    def _recovery_pending(self, entries: list[dict[str, Any]]) -> bool:
        for entry in reversed(entries):
            if entry.get("kind") == "recovered":
                return False
            if entry.get("kind") == "compact":
                return True
        return False

    # ------------------------------------------------------------ actions

    def _checkpoint_context(self, entries: list[dict[str, Any]], resumed: bool) -> str | None:
        found = self._recover(self.payload.session_id)
        if found is None and resumed:
            previous = self._latest().get("checkpointSession")
            if previous and previous != self.payload.session_id:
                found = self._recover(previous)
        if found is None:
            return None
        checkpoint_id, brief = found
        self.journal.append({"kind": "recovered", "checkpoint": checkpoint_id})
        return f"lorelab: durable context from checkpoint {checkpoint_id}\n\n{brief}"

    def _session_start(self) -> str | None:
        source = self.payload.text("source") or self.payload.text("trigger") or "startup"
        entries = self._entries()
        self.journal.append({"kind": "start", "source": bounded(source)})
        parts = []
        # A fork (Claude Code 2.1.214: source "fork") is a new session on an earlier one's
        # history: like a resume, it gets the checkpoint of the session it came from.
        resumed = source in ("resume", "fork")
        if source == "compact" or resumed or self._recovery_pending(entries):
            recovered = self._checkpoint_context(entries, resumed=resumed)
            if recovered:
                parts.append(recovered)
        prompts = [e["text"] for e in entries if e.get("kind") == "prompt" and e.get("text")]
        open_task = prompts[-1] if prompts else self._latest().get("task")
        if open_task:
            brief = self._brief(open_task)
            if brief:
                parts.append(f"lorelab: verified memory for the open work\n\n{brief}")
        return "\n\n".join(parts) or None

    def _prompt(self) -> str | None:
        prompt = self._redacted_bounded(self.payload.data["prompt"])
        entries = self._entries()
        self.journal.append({"kind": "prompt", "text": prompt})
        self._remember_latest(task=prompt)
        parts = []
        if self._recovery_pending(entries):
            recovered = self._checkpoint_context(entries, resumed=False)
            if recovered:
                parts.append(recovered)
        if prompt.strip():
            brief = self._brief(prompt)
            if brief:
                parts.append(f"lorelab: verified memory for this task\n\n{brief}")
        return "\n\n".join(parts) or None

    def _tool(self, failed: bool) -> None:
        name = self.payload.data["tool_name"]
        tool_input = self.payload.data["tool_input"]
        if name in self.agent.shell_tools:
            command = tool_input.get("command")
            if isinstance(command, list) and all(isinstance(part, str) for part in command):
                command = shlex.join(command)
            if not isinstance(command, str) or not command.strip():
                self._log("shell tool call without a command string; nothing added")
                return
            status = exit_code(self.agent, self.payload.data, failed)
            if not self.journal.append(
                {
                    "kind": "command",
                    "command": self._redacted_bounded(command),
                    "exitCode": status,
                }
            ):
                self._log("journal is full; command not journaled")
            return
        files = edited_files(tool_input, self.payload.project)
        if files and not self.journal.append(
            {"kind": "edit", "files": [self._redacted_bounded(f) for f in files]}
        ):
            self._log("journal is full; edit not journaled")

    def _pre_compact(self) -> None:
        from lorelab.memory import CheckpointRequest, CheckpointResult

        entries = self._entries()
        prompts = [e["text"] for e in entries if e.get("kind") == "prompt" and e.get("text")]
        commands = [e for e in entries if e.get("kind") == "command"]
        failed = [e for e in commands if isinstance(e.get("exitCode"), int) and e["exitCode"] != 0]
        unknown = [e for e in commands if e.get("exitCode") is None]
        files = list(
            dict.fromkeys(f for e in entries if e.get("kind") == "edit" for f in e["files"])
        )
        # Served: the hook read its own transcript; a path a client names is never opened.
        last_reply = (
            last_assistant_text(self.payload.text("transcript_path"))
            if self.served is None
            else self.served.last_reply
        )
        summary_lines = [
            f"Session {self.payload.session_id} in {self.payload.project.name}: "
            f"{len(prompts)} prompt(s), {len(commands)} command(s), {len(failed)} failed, "
            f"{len(files)} file(s) edited."
        ]
        verified = _last_verification(entries)
        if verified is not None:
            state = "passed" if verified.get("exitCode") == 0 else "did not pass"
            summary_lines.append(
                f"Last verification after the last edit {state}: {verified['command']}"
            )
        if last_reply:
            summary_lines.append(f"Last assistant message: {self._redacted_bounded(last_reply)}")
        notes = [f"prompt: {text[:500]}" for text in prompts[-20:]]
        notes += [f"file touched: {name}" for name in files[-100:]]
        notes += [f"command with unknown exit status: {e['command'][:500]}" for e in unknown[-20:]]
        # JSON input: the request model is strict, and its nested models come as objects.
        request = CheckpointRequest.model_validate_json(
            json.dumps(
                {
                    "scope": _scope(self.payload.session_id),
                    "boundary": "compaction",
                    "summary": "\n".join(summary_lines),
                    "notes": notes[:200],
                    "task": prompts[0] if prompts else None,
                    "failed_commands": [
                        {"command": e["command"], "exit_code": e["exitCode"]} for e in failed[-200:]
                    ],
                }
            )
        )
        # The checkpoint operation's own function (the operations table's handler calls it with
        # the memory home too), imported alone: the table would load every aggregate module.
        from lorelab.memory._context import checkpoint

        result = checkpoint(self.home, request)
        assert isinstance(result, CheckpointResult)
        self.journal.append({"kind": "compact", "checkpoint": result.checkpoint_id})
        self._remember_latest(checkpointSession=self.payload.session_id)
        self._log(
            f"checkpoint {result.checkpoint_id} written for {_scope(self.payload.session_id)}"
        )

    def _stop(self) -> None:
        entries = self._entries()
        start = max(
            (i + 1 for i, e in enumerate(entries) if e.get("kind") in ("recorded", "proposed")),
            default=0,
        )
        window = entries[start:]
        if not any(e.get("kind") == "edit" for e in window):
            return  # nothing was changed since the last proposal: nothing to learn from
        prompts = [e["text"] for e in window if e.get("kind") == "prompt" and e.get("text")]
        earlier = [e["text"] for e in entries if e.get("kind") == "prompt" and e.get("text")]
        task = prompts[0] if prompts else (earlier[-1] if earlier else self._latest().get("task"))
        if not task:
            self.journal.append({"kind": "proposed", "reason": "no task prompt was journaled"})
            self._log("edits without a journaled prompt: no experience proposed")
            return
        verification = _last_verification(window)
        if verification is None or verification.get("exitCode") is None:
            reason = (
                "no verification command ran after the last edit"
                if verification is None
                else "the verification command's exit status is unknown"
            )
            self.journal.append({"kind": "proposed", "verified": False, "reason": reason})
            self._log(f"experience not recorded (unverified, never served): {reason}")
            return
        # Loaded only here: most Stop events (one per agent turn) have nothing to record.
        from lorelab.memory import CommandRun, RecordRequest, Verification, open_store

        commands = [
            CommandRun(command=e["command"], exit_code=e["exitCode"])
            for e in window
            if e.get("kind") == "command" and isinstance(e.get("exitCode"), int)
        ][-200:]
        files = list(
            dict.fromkeys(f for e in window if e.get("kind") == "edit" for f in e["files"])
        )
        relative = [f for f in files if not f.startswith("/") and ".." not in f.split("/")][:500]
        passed = verification["exitCode"] == 0
        summary = (
            f"Edited {', '.join(relative[:10]) or 'files'}"
            f"{' and more' if len(relative) > 10 else ''}; verification "
            f"`{verification['command']}` {'passed' if passed else 'failed'} after the last "
            f"edit ({len(commands)} command(s) journaled by the {self.agent.name} hooks)."
        )
        store = open_store(self.home)
        try:
            result = store.record(
                RecordRequest(
                    task=task,
                    summary=summary,
                    outcome="passed" if passed else "failed",
                    verification=Verification(
                        command=verification["command"], exit_code=verification["exitCode"]
                    ),
                    commands=commands,
                    files=relative,
                    project=self.payload.project.name,
                    host=self.agent.name,
                )
            )
        finally:
            store.close()
        self.journal.append(
            {"kind": "recorded", "experience": result.id, "verified": result.verified}
        )
        self._log(
            f"experience {result.id} recorded ({'verified' if result.verified else 'unverified'})"
        )


def _last_verification(entries: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The last verification command run after the last edit, if any."""
    last_edit = max((i for i, e in enumerate(entries) if e.get("kind") == "edit"), default=-1)
    found = None
    for entry in entries[last_edit + 1 :]:
        if entry.get("kind") == "command" and is_verification(str(entry.get("command", ""))):
            found = entry
    return found
