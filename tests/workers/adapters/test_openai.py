"""The openai adapter against replies recorded from a real llama-cpp-python server.

The replies come from ``tests/workers/data/openai/llama_cpp.json`` (see
``tests/support/openai.py``), replayed by the shipped stand-in ``lorelab.testing.openai_server``;
each fault (another model name, a cut answer, an oversized body) is that recorded reply with one
thing changed.
"""

from __future__ import annotations

import json

from lorelab.testing.openai_server import ReplayServer, Reply
from lorelab.workers import WorkerBounds, bind_identity, check_identity
from lorelab.workers.adapters.openai._chat import role_schema
from tests.support.openai import (
    answer_text,
    call,
    distinct_architect,
    exchange,
    openai_argv,
    with_content,
)
from tests.support.workers import architect_payload, author_payload, reviewer_payload


def test_a_constrained_answer_of_the_real_server_is_parsed_validated_and_its_usage_recorded(trial):
    # SmolLM2-135M's recorded architect answer has the schema's shape, but four of its five
    # cases share one name: the role's own validation refuses it, and the usage still counts.
    item = exchange("architect", "llama-cpp")
    reply_body = item["response"]["body"]
    names = [case["name"] for case in json.loads(answer_text(item), strict=False)["cases"]]
    assert len(set(names)) < len(names)
    with ReplayServer([Reply.recorded(item)]) as server:
        result = call(openai_argv(server.base_url), architect_payload(), trial)
        sent = server.completions[-1]
    receipt = result.receipt
    assert receipt.failure == "nonzero-exit"
    assert "invalid-answer" in receipt.failure_detail
    assert "case names must be unique" in receipt.failure_detail
    assert result.response is None
    assert receipt.usage.input_tokens == reply_body["usage"]["prompt_tokens"]
    assert receipt.usage.output_tokens == reply_body["usage"]["completion_tokens"]
    assert receipt.usage.cost_usd is None
    assert receipt.model.claimed == reply_body["model"]
    assert sent.path == "/v1/chat/completions"
    assert sent.body["response_format"] == {
        "type": "json_object",
        "schema": role_schema("architect", architect_payload()),
    }
    assert sent.body["model"] == "smollm2-135m-instruct"


def test_the_real_servers_architect_answer_with_distinct_names_is_returned_as_the_model_wrote_it(
    trial,
):
    reply, answer = distinct_architect()
    with ReplayServer([reply]) as server:
        result = call(openai_argv(server.base_url), architect_payload(), trial)
    assert result.ok, result.receipt.failure_detail
    assert result.response["cases"] == answer["cases"]


def test_the_reviewer_answer_of_the_real_server_is_a_verdict(trial):
    item = exchange("reviewer", "llama-cpp")
    with ReplayServer([Reply.recorded(item)]) as server:
        result = call(openai_argv(server.base_url), reviewer_payload(), trial)
    assert result.ok, result.receipt.failure_detail
    assert result.response["verdict"] == json.loads(answer_text(item))["verdict"]


def test_an_author_answer_is_validated_against_the_role_before_it_is_returned(trial):
    # The 135M model copied the prompt's placeholder path: refused, never passed on.
    item = exchange("author", "llama-cpp")
    recorded = json.loads(answer_text(item))
    assert [entry["path"] for entry in recorded["files"]] == ["<test path>"]
    with ReplayServer([Reply.recorded(item)]) as server:
        result = call(openai_argv(server.base_url), author_payload(), trial)
    assert result.receipt.failure == "nonzero-exit"
    assert "invalid-answer" in result.receipt.failure_detail
    assert result.response is None


def test_unconstrained_output_sends_no_response_format_and_reads_the_answer_strictly(trial):
    # Unconstrained, the real model wrapped something JSON-like in a Markdown fence: refused.
    item = exchange("architect", "none")
    assert answer_text(item).startswith("```")
    with ReplayServer([Reply.recorded(item)]) as server:
        result = call(openai_argv(server.base_url, dialect="none"), architect_payload(), trial)
        sent = server.completions[-1]
    assert "response_format" not in sent.body
    assert result.receipt.failure == "nonzero-exit"
    assert "invalid-answer" in result.receipt.failure_detail
    assert result.receipt.usage is not None


def test_the_json_schema_dialect_that_llama_cpp_refuses_fails_the_call_with_its_http_500(trial):
    item = exchange("architect", "json_schema")
    assert item["response"]["status"] == 500
    with ReplayServer([Reply.recorded(item)]) as server:
        result = call(
            openai_argv(server.base_url, dialect="json_schema"), architect_payload(), trial
        )
        sent = server.completions[-1]
    assert sent.body["response_format"]["type"] == "json_schema"
    assert result.receipt.failure == "nonzero-exit"
    assert "server-error: HTTP 500" in result.receipt.failure_detail


def test_an_answer_over_the_output_bound_fails_the_call_without_being_cut(trial):
    item = exchange("architect", "llama-cpp")
    answer = json.loads(answer_text(item))
    answer["cases"][0]["intent"] = "x" * 1500
    with ReplayServer([with_content(item, json.dumps(answer))]) as server:
        result = call(
            openai_argv(server.base_url),
            architect_payload(),
            trial,
            bounds=WorkerBounds(timeout_ms=30_000, max_output_bytes=1024),
        )
    assert result.receipt.failure == "nonzero-exit"
    assert "answer-too-large" in result.receipt.failure_detail
    assert result.receipt.usage is not None


def test_a_server_reply_over_the_body_bound_is_not_read_past_it(trial):
    item = exchange("architect", "llama-cpp")
    huge = with_content(item, "x" * (9 * 1024 * 1024))
    with ReplayServer([huge]) as server:
        result = call(openai_argv(server.base_url), architect_payload(), trial)
    assert result.receipt.failure == "nonzero-exit"
    assert "server-reply-too-large" in result.receipt.failure_detail


def test_a_malformed_json_answer_is_refused_as_invalid(trial):
    item = exchange("architect", "llama-cpp")
    cut = answer_text(item)[:25]
    with ReplayServer([with_content(item, cut)]) as server:
        result = call(openai_argv(server.base_url), architect_payload(), trial)
    assert result.receipt.failure == "nonzero-exit"
    assert "invalid-answer" in result.receipt.failure_detail
    assert result.response is None


def test_a_duplicate_key_in_the_answer_is_refused(trial):
    item = exchange("reviewer", "llama-cpp")
    doubled = '{"verdict": "approve", "verdict": "reject", "reasons": []}'
    with ReplayServer([with_content(item, doubled)]) as server:
        result = call(openai_argv(server.base_url), reviewer_payload(), trial)
    assert "duplicate key" in result.receipt.failure_detail


def test_raw_newlines_inside_answer_strings_are_accepted_as_the_grammar_emits_them(trial):
    item = exchange("architect", "llama-cpp")
    raw = '{"cases": [{"name": "upper", "intent": "clamp(5, 0, 3)\nreturns 3"}]}'
    with ReplayServer([with_content(item, raw)]) as server:
        result = call(openai_argv(server.base_url), architect_payload(), trial)
    assert result.ok, result.receipt.failure_detail
    assert result.response["cases"][0]["intent"] == "clamp(5, 0, 3)\nreturns 3"


def test_a_server_answer_that_is_not_json_fails_the_call(trial):
    with ReplayServer([Reply(200, b"<html>proxy error</html>")]) as server:
        result = call(openai_argv(server.base_url), architect_payload(), trial)
    assert "server-reply-invalid" in result.receipt.failure_detail


def test_a_server_that_stops_answering_fails_the_call_with_the_reason(trial):
    with ReplayServer([]) as server:
        base_url = server.base_url
    result = call(openai_argv(base_url), architect_payload(), trial)
    assert result.receipt.failure == "nonzero-exit"
    assert "server-error" in result.receipt.failure_detail


def test_the_model_file_is_bound_by_its_sha256_and_a_change_is_seen(trial, tmp_path):
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF" + b"\x00" * (9 * 1024 * 1024))
    argv = openai_argv("http://127.0.0.1:9/v1", "--model-file", str(model))
    identity = bind_identity(argv, cwd=trial, operator_identity=None)
    assert identity.endpoint is not None
    assert identity.endpoint.base_url == "http://127.0.0.1:9/v1"
    assert identity.endpoint.model == "smollm2-135m-instruct"
    bound = [f for f in identity.bound_files if f.kind == "model"]
    assert [f.path for f in bound] == [str(model)]
    assert identity.endpoint.model_file_sha256 == bound[0].sha256
    with model.open("r+b") as handle:
        handle.seek(5 * 1024 * 1024)
        handle.write(b"changed")
    check = check_identity(identity, cwd=trial)
    assert not check.ok
    assert any("model" in change for change in check.changes)
