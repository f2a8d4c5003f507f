"""A hook trusts only a server that proves it is the user's own (issue 40).

Each test puts something that is not the user's running server where a hook looks: a listener
on the port a killed server left in its state file, a ``serve.json`` committed to a cloned
repository, a server that trickles its answer. The hook must send it nothing of the user's (no
token, no environment value, no prompt), print nothing it says, and answer from the local store
within a bounded time. The server itself never opens a path a client names.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
from pathlib import Path
from typing import Any

import anyio
import httpx2

from lorelab._state import private_dir, server_file
from lorelab.memory import CommandRun, RecordRequest, Verification, open_store
from tests.support.hooks import SECRET, claude_payload
from tests.support.processes import children, gone_soon, no_listener_soon
from tests.support.serve import (
    PY,
    FakeListener,
    http_client,
    running_server,
    start_server,
    wait_for_state,
)

TASK = "Regenerate the parquet fixtures after the orders schema change"
PROMPT = "regenerate the parquet fixtures after the orders schema change please"
LOCAL_BRIEF = "lorelab: verified memory for this task"
ENV_SECRETS = {
    "GEMINI_API_KEY": "env-secret-gemini-4471",
    "LORELAB_TOKEN": "llb_env-secret-lorelab-9914",
    "CLAUDE_CODE_OAUTH_TOKEN": "env-secret-oauth-2203",
}


def _seed(home: Path, project: Path, summary: str = "Ran the generator; the files parse.") -> None:
    store = open_store(home, project)
    try:
        store.record(
            RecordRequest(
                task=TASK,
                summary=summary,
                outcome="passed",
                verification=Verification(command="pytest tests/fixtures", exit_code=0),
                commands=[CommandRun(command="make fixtures-legacy", exit_code=2)],
            )
        )
    finally:
        store.close()


def _env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("LORELAB_HOME", "CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR")
    }
    return {**env, **ENV_SECRETS, **extra}


def _hook(
    event: str, payload: dict[str, Any], env: dict[str, str], *, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``lorelab hooks run EVENT`` as an agent runs it, in the payload's cwd."""
    return subprocess.run(
        [PY, "-m", "lorelab", "hooks", "run", event, "--agent", "claude-code", "--via-server"],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=env,
        cwd=payload["cwd"],
        timeout=timeout,
        check=True,
    )


def _leave_state(home: Path, state: dict[str, Any]) -> None:
    """A server's state as a killed one leaves it: in the user's state directory, and in the
    memory home (where releases before issue 40 kept ``serve.json``)."""
    private_dir("servers", create=True)
    for path in (server_file(home), home / "serve.json"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(state))
        path.chmod(0o600)


def _prompt(project: Path) -> dict[str, Any]:
    return claude_payload("UserPromptSubmit", "sess-1", project, prompt=PROMPT)


def _assert_nothing_of_the_user_s(received: bytes, token: str | None) -> None:
    if token is not None:
        assert token.encode() not in received
    for value in ENV_SECRETS.values():
        assert value.encode() not in received
    assert b"parquet" not in received  # the prompt


def test_a_listener_on_a_dead_server_s_port_gets_no_token_environment_or_prompt(tmp_path):
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    _seed(home, project)
    token = "llb_" + secrets.token_urlsafe(32)
    with FakeListener() as fake:
        _leave_state(
            home,
            {"url": fake.url, "token": token, "proof_key": secrets.token_hex(32), "pid": 1},
        )
        done = _hook("UserPromptSubmit", _prompt(project), _env(LORELAB_HOME=str(home)))
    received = bytes(fake.received)
    _assert_nothing_of_the_user_s(received, token)
    assert received.startswith(b"GET /proof HTTP/1.1\r\n")  # a nonce is all it was sent
    assert "evil.example" not in done.stdout
    assert LOCAL_BRIEF in done.stdout  # answered from the local store instead
    log = (home / "hooks.log").read_text()
    assert "did not prove it is this user's server" in log


def test_a_serve_json_in_a_cloned_project_tree_is_never_read(tmp_path):
    origin, clone = tmp_path / "origin", tmp_path / "clone"
    origin.mkdir()
    _seed(origin / ".lorelab", origin)
    shutil.copytree(origin, clone)  # a repository that committed its .lorelab, cloned
    with FakeListener() as fake:
        committed = clone / ".lorelab" / "serve.json"
        committed.write_text(json.dumps({"url": fake.url, "token": "llb_x", "pid": 1}))
        committed.chmod(0o600)  # as a clone under umask 077 makes it: the user's, private
        done = _hook(
            "UserPromptSubmit", _prompt(clone), _env(CLAUDE_PROJECT_DIR=str(clone)), timeout=60
        )
    assert fake.connections == 0
    assert "evil.example" not in done.stdout


def test_a_sigkilled_server_s_local_token_dies_with_it(tmp_path):
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    _seed(home, project)
    process = start_server(home, project)
    state = wait_for_state(process, home)
    workers = children(process.pid)
    process.kill()
    process.wait(timeout=60)
    if process.stderr:
        process.stderr.close()
    # Its workers die with it (the kernel's parent-death signal). The port is free once the
    # last of their threads is gone (a killed process's first thread can be a zombie while
    # the others still hold the listening socket), so that is what is waited for.
    assert all(gone_soon(pid, 120) for pid in workers)
    assert no_listener_soon(int(state["url"].rsplit(":", 1)[1]), 120)
    token = state["token"]
    rows = open_store(home, project)
    try:
        live = rows.connection.execute(
            "SELECT name FROM serve_tokens WHERE revoked_at IS NULL"
        ).fetchall()
    finally:
        rows.close()
    assert live == []  # nothing of the killed server's token is left in the store
    port = int(state["url"].rsplit(":", 1)[1])
    # Another program takes the freed port; the stale state file still names it.
    with FakeListener(port) as fake:
        done = _hook("UserPromptSubmit", _prompt(project), _env(LORELAB_HOME=str(home)))
    _assert_nothing_of_the_user_s(bytes(fake.received), token)
    assert "evil.example" not in done.stdout
    assert LOCAL_BRIEF in done.stdout
    # The next server on the same store refuses it.
    with running_server(home, project, scope=None) as again:
        body = b"{}\n" + json.dumps(_prompt(project)).encode()
        refused = httpx2.post(
            f"{again.url}/hooks/claude-code/UserPromptSubmit",
            content=body,
            headers={"Authorization": f"Bearer {token}"},
            timeout=60,
        )
    assert refused.status_code == 401


def test_a_server_that_trickles_its_answer_does_not_hold_the_hook(tmp_path):
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    _seed(home, project)
    # One byte every half second for 100 s: a per-receive timeout would never fire.
    with FakeListener(mode="trickle", trickle_s=0.5, hold_s=100) as fake:
        _leave_state(
            home,
            {"url": fake.url, "token": "llb_t", "proof_key": secrets.token_hex(32), "pid": 1},
        )
        done = _hook("UserPromptSubmit", _prompt(project), _env(LORELAB_HOME=str(home)), timeout=50)
    assert LOCAL_BRIEF in done.stdout  # fell back to the local store within the bound


def test_even_the_user_s_own_server_gets_no_environment_and_its_answer_is_redacted_and_capped(
    tmp_path,
):
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    _seed(home, project)
    key = secrets.token_bytes(32)
    context = f"lorelab: memory\nexport GITHUB_TOKEN={SECRET}\n" + "x" * 50_000
    with FakeListener(mode="proven", proof_key=key, context=context) as fake:
        _leave_state(home, {"url": fake.url, "token": "llb_own", "proof_key": key.hex(), "pid": 1})
        done = _hook("UserPromptSubmit", _prompt(project), _env(LORELAB_HOME=str(home)))
    received = bytes(fake.received)
    assert b"parquet" in received  # the proven server got the payload...
    for value in ENV_SECRETS.values():  # ...and no environment value
        assert value.encode() not in received
    shown = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert shown.startswith("lorelab: memory")
    assert SECRET not in shown
    assert len(shown) <= 10_000


def _recover(url: str, token: str, scope: str) -> dict[str, Any]:
    async def main() -> dict[str, Any]:
        async with http_client(f"{url}/mcp", token) as client:
            result = await client.call_tool(
                "lore_recover", {"scope": scope}, read_timeout_seconds=60
            )
            assert result.structured_content is not None
            return dict(result.structured_content)

    return anyio.run(main)


def _transcript(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    line = {"type": "assistant", "message": {"role": "assistant", "content": text}}
    path.write_text(json.dumps(line) + "\n")


def test_the_server_never_opens_a_transcript_path_a_client_names(tmp_path):
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    elsewhere = tmp_path / "elsewhere" / "notes.jsonl"
    _transcript(elsewhere, "the launch code is 7731-ALPHA")
    with running_server(home, project, scope="write") as server:
        payload = claude_payload("PreCompact", "s-named", project, trigger="manual")
        payload["transcript_path"] = str(elsewhere)
        assert server.token is not None
        answered = httpx2.post(
            f"{server.url}/hooks/claude-code/PreCompact",
            content=b"{}\n" + json.dumps(payload).encode(),
            headers={"Authorization": f"Bearer {server.token}"},
            timeout=60,
        )
        assert answered.status_code == 200
        recovered = _recover(server.url, server.token, "session:s-named")
    assert recovered["found"] is True  # the checkpoint was written...
    assert "7731-ALPHA" not in json.dumps(recovered)  # ...without the file's text


def test_a_pre_compact_hook_sends_its_own_transcript_text_to_the_server(tmp_path):
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    payload = claude_payload("PreCompact", "s-own", project, trigger="manual")
    _transcript(Path(payload["transcript_path"]), "the fixtures are regenerated")
    with running_server(home, project, scope="write") as server:
        env = _env(LORELAB_HOME=str(home), LORELAB_HOOK_SERVER_DEADLINE_S="120")
        _hook("PreCompact", payload, env)
        assert server.token is not None
        recovered = _recover(server.url, server.token, "session:s-own")
    assert "Last assistant message: the fixtures are regenerated" in json.dumps(recovered)
    log = (home / "hooks.log").read_text()
    assert "handled in-process" not in log  # the server wrote it


def test_serve_refuses_a_cloned_project_store_it_was_not_pointed_at(tmp_path):
    origin, clone = tmp_path / "origin", tmp_path / "clone"
    origin.mkdir()
    _seed(origin / ".lorelab", origin)
    shutil.copytree(origin, clone)
    env = {k: v for k, v in os.environ.items() if k != "LORELAB_HOME"}
    done = subprocess.run(
        [PY, "-m", "lorelab", "serve", "--project", str(clone), "--port", "0"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 3
    assert "not created by lorelab for this user" in done.stderr
    assert "lorelab hooks trust" in done.stderr
    assert not server_file(clone / ".lorelab").exists()
