import sys

import pytest

from lorelab.errors import UsageError
from lorelab.workers import SHIPPED_ADAPTERS, is_fixture_agent, resolve_agent


@pytest.mark.parametrize(
    ("name", "module"),
    [
        ("fixture", "lorelab.testing.fixture"),
        ("fixture-host", "lorelab.testing.fixture_host"),
        ("fixture-context", "lorelab.testing.fixture_context"),
        ("claude", "lorelab.workers.adapters.claude"),
        ("codex", "lorelab.workers.adapters.codex"),
        ("gemini", "lorelab.workers.adapters.gemini"),
        ("pynguin", "lorelab.workers.adapters.pynguin"),
    ],
)
def test_a_shipped_adapter_name_runs_its_module_with_this_interpreter(name, module):
    assert resolve_agent(name) == [sys.executable, "-m", module]
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
    assert is_fixture_agent(["python3", "-u", "-m", "lorelab.testing.fixture"])
    assert is_fixture_agent(["python3", "-mlorelab.testing.fixture_host"])
    assert not is_fixture_agent(resolve_agent("claude"))
    assert not is_fixture_agent(["python3", "fixture.py"])
    assert not is_fixture_agent(["python3", "-m", "lorelab.testing.fixtures_evil"])


def test_the_fixture_modules_moved_out_of_the_adapters_are_no_fixture_agents():
    """The doubles live in lorelab.testing; the old adapter paths name no module any more."""
    assert not is_fixture_agent(["python3", "-m", "lorelab.workers.adapters.fixture"])
    assert not is_fixture_agent(["python3", "-m", "lorelab.workers.adapters.fixture_host"])
