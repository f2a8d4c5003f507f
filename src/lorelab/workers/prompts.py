"""The one versioned role prompt: what an agent adapter asks, and its hash.

Every adapter builds its prompt here, so one ``PROMPT_VERSION`` and one hash per role
(``prompt_hash``) identify what an agent was asked; the transport records that hash in every
role receipt.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from lorelab.io import canonical_bytes, pretty_json, sha256_bytes
from lorelab.workers.roles import PROMPT_VERSION, check_role

_COMMON: Final = """\
You are a worker for lorelab (protocol lorelab.worker/1, {version}), in the role "{role}".
Your input is the JSON object at the end of this message.
Reply with exactly one JSON object and nothing else: no prose before or after it, no Markdown
code fences. Use only the keys shown below; any other key makes the whole reply invalid.
"""

ROLE_PROMPTS: Final[dict[str, str]] = {
    "architect": """\
Task: plan the test cases for the requirements in `task.requirements`, for the source files in
`task.source` and the runner in `task.runner`. Do not write test code.

Reply shape:
{"cases": [{"name": "<short_snake_case_name>", "intent": "<input and expected behaviour>"}]}

Rules:
- At least 1 and at most `limits.maxCases` cases; names unique, one line each.
- Each intent names the call or input and the behaviour the requirements demand for it, in one
  or two sentences. Plan only what the requirements state; do not invent behaviour.
- `lessons` holds validated test suites from past, similar specifications (it may be empty).
  Reuse their case patterns (boundaries, empty inputs, error cases, ...) where they apply to
  this task's requirements; never copy expectations that these requirements do not state.
""",
    "author": """\
Task: write the test files that implement `plan.cases` for the requirements in
`task.requirements`, against the source files in `task.source`, for `task.runner`.

Reply shape:
{"files": [{"path": "<test path>", "content": "<the whole file>"}]}

Rules:
- Test files only, at most `limits.maxFiles` files and at most `limits.maxCases` test cases in
  all. Never return source files, configuration files or helpers (exception, pytest only:
  `tests/conftest.py` when `limits.allowConftest` is true).
- pytest: paths `tests/test_<name>.py`; import the module under test as
  `from src.<name> import ...` (pytest runs from the project root). One `def test_...` function
  per case.
- node: paths `test/<name>.test.js`; use `const test = require("node:test")`,
  `const assert = require("node:assert/strict")` and `require("../src/<name>.js")`. One `test(...)`
  call per case.
- Tests must pass against a correct implementation of the requirements and fail when the
  behaviour they check is broken. No network, no clock, no randomness, no files outside the
  project.
- `lessons` holds validated tests from past, similar specifications (it may be empty). Reuse
  their patterns where they fit these requirements; assert only what these requirements state.
""",
    "reviewer": """\
Task: review the candidate test files in `tests` against the requirements in
`task.requirements` and the source in `task.source`.

Reply shape:
{"verdict": "approve" or "reject", "reasons": ["<reason>", ...]}

Rules:
- Reject tests that assert behaviour the requirements do not state, are vacuous (cannot fail),
  depend on the network, the clock, randomness or files outside the project, modify the source,
  or are not test files. A rejection gives at least one reason; an approval may give none.
- Judge the tests only; do not rewrite them.
""",
    "host": """\
Task: solve the coding task in `task.prompt` by editing files in your current working
directory (and nowhere else). `task.verify` is the task's verification command. `guidance`,
when present, is memory guidance (a brief or a plan); use it only where it helps.
`lastVerification` is the result of the verification command before this attempt: on attempt 1,
before any edit; later, after the previous attempt.

Reply shape:
{"summary": "<what you changed and why>", "commands": [{"command": "<command>", "exitCode": 0}],
 "cycles": [{"edited": ["<file>", ...], "verification": {"command": "<task.verify>",
 "exitCode": 0}}]}

Rules:
- List every shell command you ran, in order, with its exit code (null if you do not know it).
- Run `task.verify` after each edit. List each edit-then-verify cycle in `cycles`, in order:
  the files you edited since the previous verify run, then that run's command and exit code.
- Do not read or write credentials, and do not use the network unless the task requires it.
""",
    "context": """\
Task: resume work after a context boundary (`trial.boundary`: a compaction or a restart). Your
earlier context is gone. `recovered` is the checkpoint written at the boundary: its `summary`
lists the earlier events as `[index] author kind: content`, its `notes` say what to keep, and
its `failedCommands` must not be repeated. `brief` is the same checkpoint as text. `task` is the
original task and names the facts to report (`- fact <id>: ...`); `request` is the turn to
answer. `transcript` holds the events your earlier turns of this trial added.

Reply shape:
{"commands": [{"command": "<command>", "exitCode": 0}],
 "answer": {"facts": [{"id": "<fact id>", "value": "<value>", "evidence": [<event index>]}],
            "claims": [{"text": "<claim>", "evidence": [<event index>]}]}}

Rules:
- State each fact the task names, citing the indices of the earlier events that support it.
  Cite only events that exist and come before your answer.
- Do not repeat a command listed in `recovered.failedCommands`.
- List every command you ran this turn, in order, with its exit code; they get event indices
  from `nextIndex` on. Set "answer" to null to ask for another turn (at most `trial.maxTurns`).
""",
    "dreamer": """\
Task: propose candidate Skills (reusable procedures) from the verified experiences in
`experiences`. Each experience is work that passed its verification: its `task`, a `summary`,
the `commands` it ran with their exit codes, and its `verification` command. Do not run
anything and do not edit files; only answer.

Reply shape:
{"candidates": [{"name": "<skill-name>", "description": "<what it does and when to use it>",
  "steps": ["<command>", ...],
  "checks": [{"command": "<command>", "expectedExitCode": 0}],
  "sourceExperienceIds": ["<experience id>", "<experience id>"]}]}

Rules:
- At most `limits.maxCandidates` candidates; `{"candidates": []}` when nothing is shared.
- A candidate is a procedure that two or more of the given experiences actually followed: its
  `sourceExperienceIds` name at least two ids from `experiences`, and its `steps` are commands
  those experiences ran successfully, in order.
- Every candidate has at least one check: a command, run in a fresh copy of the project, whose
  expected exit code shows the procedure works (usually the shared verification command, 0).
- `name`: 1 to 64 lowercase letters, digits and single hyphens, not starting or ending with a
  hyphen. `description`: at most 1024 characters.
- Never invent commands, paths or secrets the experiences do not show.
""",
}


def role_prompt(role: str) -> str:
    """The full instruction text for ``role`` (shared preamble, then the role's rules)."""
    check_role(role)
    return _COMMON.format(version=PROMPT_VERSION, role=role) + "\n" + ROLE_PROMPTS[role]


def prompt_hash(role: str) -> str:
    """SHA-256 of the role prompt's version and text; recorded in every role receipt."""
    return sha256_bytes(canonical_bytes({"version": PROMPT_VERSION, "text": role_prompt(role)}))


def build_prompt(role: str, payload: Mapping[str, Any]) -> str:
    """The prompt an agent adapter sends: the role prompt, the size limit, then the input JSON.

    ``transportBudget`` is not shown as input; its output bound is stated as a rule instead, so
    the agent knows how long its reply may be.
    """
    body = {key: value for key, value in payload.items() if key != "transportBudget"}
    budget = payload.get("transportBudget")
    limit = ""
    if isinstance(budget, Mapping) and isinstance(budget.get("maxOutputBytes"), int):
        limit = (
            f"- Your whole reply must be shorter than {budget['maxOutputBytes']} bytes of UTF-8;"
            " a longer reply is discarded.\n"
        )
    return f"{role_prompt(role)}{limit}\nInput:\n{pretty_json(body)}"
