"""Test doubles shipped with lorelab, for users' tests and lorelab's own.

``lorelab.testing.fixture`` (agent name ``fixture``), ``fixture_host`` (``fixture-host``) and
``fixture_context`` (``fixture-context``) are deterministic, offline workers that speak the
``lorelab.worker/1`` protocol from the payload alone. Their answers carry
``evidenceKind: "protocol-fixture"``: they exercise the protocol and never count as evidence
about a real agent. ``lorelab.testing.quality`` holds the helpers the retrieval benchmarks use to
load labelled retrieval sets into a store. ``lorelab.testing.memcoder`` is a stand-in for
MemCoder's MCP server (``python -m lorelab.testing.memcoder``): it serves MemCoder's captured
tool schemas and answers in its shapes, for exercising the ``memcoder`` conditions profile.
``lorelab.testing.openai_server`` is a stand-in OpenAI-compatible server that replays recorded
replies of a real one (and scripted faults), for exercising the ``openai`` adapter offline.
"""
