"""What the server serves is bound and compared before and after every call.

The stand-in answers as the published formats say: llama.cpp's own server lists its model with
``meta`` at ``GET /v1/models`` and names the loaded file at ``GET /props`` (``model_path``;
llama.cpp ``tools/server/README.md``); vLLM lists ``root``, the path or repository it loaded
(vLLM's ``ModelCard``, ``vllm/entrypoints/openai/protocol.py``); llama-cpp-python's server
lists only its alias (recorded from 0.3.36 in ``tests/workers/data/openai/llama_cpp.json``).
"""

from __future__ import annotations

import pytest

from lorelab.errors import UsageError
from lorelab.testing.openai_server import ReplayServer, Reply
from lorelab.workers import WorkerBounds, bind_identity, call_worker, check_identity
from tests.support.openai import exchange, openai_argv
from tests.support.workers import reviewer_payload

ALIAS = "smollm2-135m-instruct"


def _listing(model_id: str, **extra: object) -> dict[str, object]:
    return {"object": "list", "data": [{"id": model_id, "object": "model", **extra}]}


def _llama_meta(n_params: int) -> dict[str, object]:
    return {"vocab_type": 2, "n_vocab": 49152, "n_params": n_params, "size": n_params // 2}


def _reviewer() -> Reply:
    return Reply.recorded(exchange("reviewer", "llama-cpp"))


def test_the_served_models_are_bound_into_the_identity(trial):
    with ReplayServer([], models=_listing(ALIAS, meta=_llama_meta(134_515_008)),
                      props={"model_path": "/models/smollm2.gguf"}) as server:  # fmt: skip
        identity = bind_identity(openai_argv(server.base_url), cwd=trial, operator_identity=None)
    served = identity.endpoint.served
    assert [entry.id for entry in served.listed] == [ALIAS]
    assert served.listed[0].meta["n_params"] == 134_515_008
    assert served.model_path == "/models/smollm2.gguf"
    assert served.unasked is None


def test_a_renamed_model_is_refused_at_binding_with_what_the_server_serves(trial):
    with ReplayServer([]) as server:
        argv = openai_argv(server.base_url)
        argv[argv.index(ALIAS)] = "smollm2-RENAMED"
        with pytest.raises(UsageError) as refused:
            bind_identity(argv, cwd=trial, operator_identity=None)
    assert "--model 'smollm2-RENAMED' is not served by" in str(refused.value)
    assert ALIAS in str(refused.value)


def test_a_server_restarted_with_another_file_mid_run_makes_the_call_identity_changed(trial):
    # llama.cpp keeps the alias it was given: only /props and the metadata show the swap.
    with ReplayServer([_reviewer(), _reviewer()], models=_listing(ALIAS, meta=_llama_meta(134)),
                      props={"model_path": "/models/smollm2.gguf"}) as server:  # fmt: skip
        argv = openai_argv(server.base_url)
        identity = bind_identity(argv, cwd=trial, operator_identity=None)
        bounds = WorkerBounds(timeout_ms=30_000)
        first = call_worker(argv, "reviewer", reviewer_payload(), cwd=trial, bounds=bounds,
                            identity=identity)  # fmt: skip
        server.serve(models=_listing(ALIAS, meta=_llama_meta(268)),
                     props={"model_path": "/models/gemma-3-270m.gguf"})  # fmt: skip
        second = call_worker(argv, "reviewer", reviewer_payload(), cwd=trial, bounds=bounds,
                             identity=identity)  # fmt: skip
        completions = len(server.completions)
    assert first.ok, first.receipt.failure_detail
    assert second.receipt.failure == "identity-changed"
    assert not second.receipt.spawned
    changes = " ".join(second.receipt.identity_changes)
    assert "the loaded file changed from /models/smollm2.gguf to /models/gemma-3-270m.gguf" in (
        changes
    )
    assert "metadata changed" in changes
    assert completions == 1


def test_llama_cpp_python_restarted_without_the_alias_is_seen_by_its_listed_id(trial):
    with ReplayServer([_reviewer()]) as server:
        argv = openai_argv(server.base_url)
        identity = bind_identity(argv, cwd=trial, operator_identity=None)
        server.serve(models=_listing("/models/gemma-3-270m.gguf"), props=None)
        check = check_identity(identity, cwd=trial)
    assert not check.ok
    assert any("--model 'smollm2-135m-instruct' is not served" in c for c in check.changes)


def test_a_vllm_root_that_is_not_the_bound_model_file_is_refused(trial, tmp_path):
    model = tmp_path / "qwen2.5-coder-7b-instruct-q4_k_m.gguf"
    model.write_bytes(b"GGUF" + b"\x00" * 64)
    listing = _listing(ALIAS, root="/srv/models/deepseek-coder-6.7b.Q4_K_M.gguf")
    with ReplayServer([], models=listing) as server:
        argv = openai_argv(server.base_url, "--model-file", str(model))
        with pytest.raises(UsageError) as refused:
            bind_identity(argv, cwd=trial, operator_identity=None)
    assert f"--model-file {model} is not the model" in str(refused.value)
    assert "deepseek-coder-6.7b.Q4_K_M.gguf" in str(refused.value)


def test_a_props_model_path_on_this_machine_is_compared_by_content(trial, tmp_path):
    bound = tmp_path / "bound.gguf"
    bound.write_bytes(b"GGUF" + b"\x01" * 64)
    same = tmp_path / "copy-elsewhere.gguf"
    same.write_bytes(bound.read_bytes())
    other = tmp_path / "other.gguf"
    other.write_bytes(b"GGUF" + b"\x02" * 64)
    argv_of = lambda url: openai_argv(url, "--model-file", str(bound))  # noqa: E731
    with ReplayServer([], props={"model_path": str(same)}) as server:
        identity = bind_identity(argv_of(server.base_url), cwd=trial, operator_identity=None)
    assert identity.endpoint.served.model_path == str(same)
    with ReplayServer([], props={"model_path": str(other)}) as server, pytest.raises(UsageError):
        bind_identity(argv_of(server.base_url), cwd=trial, operator_identity=None)


def test_a_server_that_cannot_be_reached_is_recorded_as_not_asked(trial):
    with ReplayServer([]) as server:
        base_url = server.base_url
    identity = bind_identity(openai_argv(base_url), cwd=trial, operator_identity=None)
    served = identity.endpoint.served
    assert served.listed is None
    assert served.unasked
    assert check_identity(identity, cwd=trial).ok
