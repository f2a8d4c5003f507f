import sys

import pytest

from lorelab.errors import UsageError
from lorelab.workers import SHIPPED_ADAPTERS, is_fixture_agent, resolve_agent


@pytest.mark.parametrize(
    ("name", "module"),
    [
        ("fixture", "fixture"),
        ("fixture-host", "fixture_host"),
        ("fixture-context", "fixture_context"),
        ("claude", "claude"),
        ("codex", "codex"),
        ("gemini", "gemini"),
        ("pynguin", "pynguin"),
    ],
)
def test_a_shipped_adapter_name_runs_its_module_with_this_interpreter(name, module):
    assert resolve_agent(name) == [sys.executable, "-m", f"lorelab.workers.adapters.{module}"]
    assert name in SHIPPED_ADAPTERS


def test_a_json_array_is_the_argv_as_given():
    assert resolve_agent('["python3", "worker.py", "--model", "x"]') == [
        "python3",
        "worker.py",
        "--model",
        "x",
    ]


@pytest.mark.parametrize(
    "text",
    [
        "python3 worker.py",
        "claude --model opus",
        "[]",
        '["python3", 3]',
        '["python3", ""]',
        '"python3"',
        '["a", "a", ]',
        '{"argv": ["python3"]}',
    ],
)
def test_anything_else_is_refused(text):
    with pytest.raises(UsageError):
        resolve_agent(text)


def test_fixture_agents_are_recognised_however_python_is_named():
    assert is_fixture_agent(resolve_agent("fixture"))
    assert is_fixture_agent(resolve_agent("fixture-host"))
    assert is_fixture_agent(resolve_agent("fixture-context"))
    assert is_fixture_agent(["python3", "-u", "-m", "lorelab.workers.adapters.fixture"])
    assert not is_fixture_agent(resolve_agent("claude"))
    assert not is_fixture_agent(["python3", "fixture.py"])
    assert not is_fixture_agent(["python3", "-m", "lorelab.workers.adapters.fixtures_evil"])
