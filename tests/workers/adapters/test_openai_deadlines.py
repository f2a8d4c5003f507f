"""The openai adapter's deadlines: a timed-out call stops costing the server, a trickling server
cannot hold a preflight, and each role's completion asks for its own answer budget."""

from __future__ import annotations

import json
import threading
import time

from lorelab.testing.openai_server import ReplayServer, Reply
from lorelab.workers import WorkerBounds
from lorelab.workers.adapters.openai._http import parse_base_url, unreachable
from tests.support.openai import call, distinct_architect, exchange, openai_argv
from tests.support.slow_server import CountingServer, GeneratingServer, TricklingServer
from tests.support.workers import architect_payload, reviewer_payload

FIRST_TIMEOUT_MS = 9_000


def test_a_timed_out_call_closes_its_connection_and_does_not_delay_the_next_call(trial):
    with GeneratingServer() as server:
        argv = openai_argv(server.base_url)
        started = time.monotonic()
        first = call(argv, reviewer_payload(), trial, bounds=WorkerBounds(FIRST_TIMEOUT_MS))
        first_s = time.monotonic() - started
        # The server saw the client leave, and stopped generating.
        assert server.disconnected.wait(timeout=5)
        started = time.monotonic()
        second = call(argv, reviewer_payload(), trial, bounds=WorkerBounds(30_000))
        second_s = time.monotonic() - started
    assert first.receipt.failure == "nonzero-exit"
    assert "server-timeout" in first.receipt.failure_detail
    assert "connection closed" in first.receipt.failure_detail
    assert first_s < FIRST_TIMEOUT_MS / 1000 + 2
    assert second.ok, second.receipt.failure_detail
    # Not queued behind the first call's generation: within the first call's own timeout.
    assert second_s < FIRST_TIMEOUT_MS / 1000


def test_preflight_against_a_trickling_server_gives_up_at_its_total_deadline():
    outcome: list[str | None] = []
    with TricklingServer(every_s=0.3) as server:
        endpoint = parse_base_url(server.base_url)
        worker = threading.Thread(
            target=lambda: outcome.append(unreachable(endpoint, timeout_s=1.5)), daemon=True
        )
        started = time.monotonic()
        worker.start()
        worker.join(timeout=10)
        seconds = time.monotonic() - started
    assert outcome, "the preflight was still waiting after 10 s"
    assert seconds < 4
    assert outcome[0] is not None
    assert "timed out after 2 s" in outcome[0] or "timed out" in outcome[0]


def test_each_role_asks_for_its_own_answer_budget_in_tokens(trial):
    architect_reply, _ = distinct_architect()
    reviewer_reply = Reply.recorded(exchange("reviewer", "llama-cpp"))
    with ReplayServer([architect_reply, reviewer_reply]) as server:
        argv = openai_argv(server.base_url)
        call(argv, architect_payload(), trial)
        call(argv, reviewer_payload(), trial)
        architect, reviewer = server.completions
    # maxCases 5: 64 + 96 per case; the reviewer's verdict needs far less.
    assert architect.body["max_tokens"] == 64 + 96 * 5
    assert reviewer.body["max_tokens"] == 384
    assert architect.body["stream"] is True


def test_max_tokens_is_a_ceiling_on_every_roles_budget(trial):
    architect_reply, _ = distinct_architect()
    with ReplayServer([architect_reply]) as server:
        call(openai_argv(server.base_url, "--max-tokens", "100"), architect_payload(), trial)
        (sent,) = server.completions
    assert sent.body["max_tokens"] == 100


def test_a_key_echoed_in_the_replys_model_reaches_no_receipt(trial, monkeypatch):
    key = "sk-planted-" + "k" * 32
    monkeypatch.setenv("OPENAI_API_KEY", key)
    good = Reply.recorded(exchange("reviewer", "llama-cpp"))
    invalid = Reply.recorded(exchange("author", "llama-cpp"))
    for streamed in ((), ("--no-stream",)):
        with ReplayServer([good, good], echo_in_model=True) as server:
            argv = openai_argv(server.base_url, *streamed)
            answered = call(argv, reviewer_payload(), trial)
        with ReplayServer([invalid], echo_in_model=True) as server:
            from tests.support.workers import author_payload

            rejected = call(openai_argv(server.base_url, *streamed), author_payload(), trial)
        assert answered.ok, answered.receipt.failure_detail
        assert answered.receipt.model.claimed == "Bearer [key]"
        assert rejected.receipt.raw_response
        for result in (answered, rejected):
            text = json.dumps(result.receipt.model_dump(mode="json", by_alias=True))
            assert key not in text
            assert key[-8:] not in text
            assert "Bearer sk-" not in text


def _side_by_side(argv, trial) -> list:
    results: list = []
    threads = [
        threading.Thread(target=lambda: results.append(call(argv, reviewer_payload(), trial)))
        for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


def test_serialized_calls_reach_a_local_server_one_at_a_time_and_report_the_wait(trial):
    with CountingServer(hold_s=1.5) as server:
        results = _side_by_side(openai_argv(server.base_url, "--serialize-calls"), trial)
        most = server.most
    assert len(results) == 2
    assert all(result.ok for result in results), [r.receipt.failure_detail for r in results]
    assert most == 1
    waits = [
        int(line.rsplit("queue wait ", 1)[1].split(" ms")[0])
        for result in results
        for line in result.receipt.stderr_tail.splitlines()
        if "queue wait" in line
    ]
    assert len(waits) == 2
    assert max(waits) >= 1000


def test_without_serialization_the_calls_overlap(trial):
    with CountingServer(hold_s=1.5) as server:
        results = _side_by_side(openai_argv(server.base_url), trial)
        most = server.most
    assert all(result.ok for result in results)
    assert most == 2
