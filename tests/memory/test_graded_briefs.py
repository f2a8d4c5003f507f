"""Graded briefs: every served experience carries ``tier`` and ``confidence`` on all four
surfaces (MCP ``lore_prepare`` through the SDK's own client, ``memory prepare --json``, the
hook's brief text, ``lore_explain``); an unrelated task gets an empty brief; a ``related``
item is context, never worded as an instruction. The in-process surfaces are shown on
WordLlama stores graded by :data:`WITH_MATCH` (:func:`match_tier`), MCP (a server process of
its own) on a MiniLM store with its bundled rule."""

import json
import re
import sys
from dataclasses import replace
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from mcp.client.stdio import StdioServerParameters

from lorelab.cli.main import app
from lorelab.hooks import run_hook
from lorelab.memory import (
    DEFAULT_POLICY,
    ExplainRequest,
    PrepareRequest,
    RelevancePolicy,
    SqliteMemoryStore,
    _relevance,
)
from lorelab.memory._brief import RELATED_HEADING, render
from lorelab.memory._embedders import MINILM, WORDLLAMA
from lorelab.memory._models import BriefExperience
from mcp import Client
from tests.memory.conftest import WITH_MATCH
from tests.support.hooks import claude_payload
from tests.support.memory import experience

REFUND = "Fix failing test_refund_partial_amount after Decimal rounding change"
EXPORT = "Refund totals are off by one cent for partial refunds in the invoice export"
CHECKOUT = "Checkout page shows prices without the currency symbol"
# A near-repeat of REFUND (the same problem), a task near EXPORT's area but another
# problem, and a task about nothing stored.
REPEAT = "test_refund_partial_amount fails again after the Decimal rounding change"
AREA = "Refund emails are sent twice to customers"
UNRELATED = "Add a dark mode toggle to the settings page"
# Words that would make an item an instruction to the agent.
IMPERATIVE = re.compile(r"\b(what worked|follow|verified by|do this|run|avoid|must|should)\b", re.I)


def _seed(store: SqliteMemoryStore, project: str | None = "payments-api") -> None:
    store.record(experience(task=REFUND, project=project))
    store.record(
        experience(
            task=EXPORT,
            project=project,
            summary="Run scripts/fix_export.py and always quantize the export with ROUND_HALF_UP.",
            commands=[
                ("python scripts/fix_export.py --old", 1),
                ("pytest tests/test_refunds.py", 0),
            ],
        )
    )
    store.record(experience(task=CHECKOUT, project=project))


def _keys_ok(item: dict[str, Any]) -> None:
    assert item["tier"] in {"match", "related"}
    assert 0.0 <= item["confidence"] <= 1.0


WORDLLAMA_GRADING = DEFAULT_POLICY.grading_for(WORDLLAMA.model_id)
MINILM_GRADING = DEFAULT_POLICY.grading_for(MINILM.model_id)


@pytest.fixture
def match_tier(monkeypatch: pytest.MonkeyPatch) -> None:
    """WordLlama stores graded by :data:`WITH_MATCH` in this process (CLI runner, hooks): a
    fixed rule, so these tests do not move with each refit of the bundled ones."""
    gradings = {**_relevance.GRADINGS, WORDLLAMA.model_id: WITH_MATCH}
    monkeypatch.setattr(_relevance, "GRADINGS", gradings)


def test_both_bundled_rules_have_a_match_tier_above_their_related_tier():
    for grading in (MINILM_GRADING, WORDLLAMA_GRADING):
        assert 0.0 < grading.related < grading.match <= 1.0


@pytest.mark.usefixtures("match_tier")
def test_a_near_repeat_is_a_match_and_an_area_task_gets_a_related_item(tmp_path):
    with SqliteMemoryStore(tmp_path / "m.db", embedding_model="wordllama") as store:
        _seed(store)
        repeat = store.prepare(PrepareRequest(task=REPEAT))
        area = store.prepare(PrepareRequest(task=AREA))
    assert [(e.id, e.tier) for e in repeat.experiences][:1] == [("exp-1", "match")]
    assert repeat.experiences[0].confidence >= WITH_MATCH.match  # type: ignore[operator]
    assert [e.tier for e in area.experiences] == ["related"]
    related = area.experiences[0].confidence
    assert related is not None
    assert WITH_MATCH.related <= related < WITH_MATCH.match


def test_with_minilm_a_near_repeat_is_served_first_as_a_match(tmp_path):
    # The default store's own rule (MiniLM's), no policy given.
    with SqliteMemoryStore(tmp_path / "m.db") as store:
        _seed(store)
        assert store.embedding_model == MINILM.model_id
        repeat = store.prepare(PrepareRequest(task=REPEAT))
        area = store.prepare(PrepareRequest(task=AREA))
    assert [(e.id, e.tier) for e in repeat.experiences][:1] == [("exp-1", "match")]
    assert repeat.experiences[0].confidence >= MINILM_GRADING.match  # type: ignore[operator]
    assert all(e.tier == "related" for e in area.experiences)


@pytest.mark.parametrize("model", ["minilm", "wordllama"])
def test_an_unrelated_task_gets_an_empty_brief(tmp_path, model):
    with SqliteMemoryStore(tmp_path / "m.db", embedding_model=model) as store:
        _seed(store)
        brief = store.prepare(PrepareRequest(task=UNRELATED))
        explained = store.explain(ExplainRequest(task=UNRELATED))
    assert brief.empty
    assert (brief.experiences, brief.text, brief.tokens_estimate) == ([], "", 0)
    assert "nothing stored is about this task" in (brief.reason or "")
    assert not any(c.served or c.tier for c in explained.candidates)


@pytest.mark.parametrize("model", ["minilm", "wordllama"])
def test_a_related_item_is_never_worded_as_an_instruction_and_gives_no_commands_to_avoid(
    tmp_path, model
):
    with SqliteMemoryStore(tmp_path / "m.db", embedding_model=model) as store:
        _seed(store)
        brief = store.prepare(PrepareRequest(task=AREA))
    tiers = [e.tier for e in brief.experiences]
    assert tiers
    assert set(tiers) == {"related"}
    assert "exp-2" in [e.id for e in brief.experiences]
    # Its failed command is advice for the same problem only: a related item gives none.
    assert brief.avoid_commands == []
    lines = brief.text.splitlines()
    assert RELATED_HEADING in lines
    assert "not steps for this task" in RELATED_HEADING
    item = next(line for line in lines if line.startswith("- [exp-2]"))
    assert item.startswith("- [exp-2] (related, confidence ")
    # The stored summary is imperative ("Run ... always quantize"): a related item shows it
    # only as the past task's outcome, clipped, never as what to do.
    assert "Its outcome: " in item
    framing = item.split("Its outcome: ")[0]
    assert not IMPERATIVE.search(framing)
    assert "What worked" not in brief.text
    assert "Matches (" not in brief.text


def test_every_rendered_related_line_is_framed_as_context_whatever_its_summary_says():
    items = [
        BriefExperience(
            id=f"exp-{n}",
            tier="related",
            confidence=0.5,
            score=0.5,
            task=f"Past problem {n}",
            summary="Follow these steps: run make clean, then you must deploy.",
            verification_command="pytest -q",
        )
        for n in (1, 2)
    ]
    rendered = render(items, [], [], 1200)
    for line in rendered.text.splitlines():
        if line.startswith("- [exp-"):
            before, _, after = line.partition("Its outcome: ")
            assert before.startswith("- [exp-")
            assert "(related, confidence 0.50)" in before
            assert not IMPERATIVE.search(before)
            assert after.endswith("(checked by `pytest -q`)")


def test_match_items_come_first_and_related_items_after_them(tmp_path):
    # Every graded item served as related except what reaches an easier match threshold.
    easier = replace(DEFAULT_POLICY.grading_for(MINILM.model_id), match=0.9, related=0.0)
    policy = RelevancePolicy(grading=easier)
    with SqliteMemoryStore(tmp_path / "m.db", policy=policy) as store:
        _seed(store)
        brief = store.prepare(PrepareRequest(task=REPEAT, project="payments-api"))
    tiers = [e.tier for e in brief.experiences]
    assert tiers[0] == "match"
    assert "related" in tiers
    assert tiers == sorted(tiers, key=lambda t: t != "match")
    text = brief.text
    assert text.index("Matches (") < text.index("Related (")


@pytest.mark.usefixtures("match_tier")
def test_memory_prepare_json_and_explain_json_carry_tier_and_confidence(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    with SqliteMemoryStore(home / "memory.db", embedding_model="wordllama") as store:
        _seed(store)
    runner = CliRunner()
    for task, tier in ((REPEAT, "match"), (AREA, "related")):
        result = runner.invoke(app, ["memory", "--home", str(home), "prepare", task, "--json"])
        assert result.exit_code == 0, result.output
        brief = json.loads(result.stdout)
        assert brief["experiences"][0]["tier"] == tier
        for item in brief["experiences"]:
            _keys_ok(item)
        human = runner.invoke(app, ["memory", "--home", str(home), "prepare", task])
        assert f"({tier}, confidence " in human.stdout
    explained = runner.invoke(app, ["memory", "--home", str(home), "explain", AREA, "--json"])
    assert explained.exit_code == 0, explained.output
    candidates = json.loads(explained.stdout)["candidates"]
    served = [c for c in candidates if c["served"]]
    assert [c["tier"] for c in served] == ["related"]
    assert all(c["tier"] is None for c in candidates if not c["served"])
    human = runner.invoke(app, ["memory", "--home", str(home), "explain", AREA])
    assert "served as related" in human.stdout


@pytest.mark.usefixtures("match_tier")
def test_the_hook_brief_names_each_items_tier_and_confidence(tmp_path):
    project = tmp_path / "refund-project"
    project.mkdir()
    with SqliteMemoryStore(
        project / ".lorelab" / "memory.db", embedding_model="wordllama"
    ) as store:
        _seed(store, project=None)  # the hook briefs for the directory's own project name
    for task, tier in ((REPEAT, "match"), (AREA, "related")):
        payload = claude_payload("UserPromptSubmit", "s1", project, prompt=task)
        answer = json.loads(
            run_hook("claude-code", "UserPromptSubmit", json.dumps(payload).encode(), {})
        )
        context = answer["hookSpecificOutput"]["additionalContext"]
        assert re.search(rf"\[exp-\d+\] \({tier}, confidence (0|1)\.\d\d\)", context), context
    silent = claude_payload("UserPromptSubmit", "s1", project, prompt=UNRELATED)
    assert run_hook("claude-code", "UserPromptSubmit", json.dumps(silent).encode(), {}) == ""


def test_lore_prepare_and_lore_explain_over_mcp_carry_tier_and_confidence(tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    with SqliteMemoryStore(home / "memory.db") as store:  # MiniLM, its bundled rule
        _seed(store)
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "lorelab", "mcp", "--home", str(home), "--project", str(project)],
    )

    async def main() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any]]:
        async with Client(server, read_timeout_seconds=60) as client:
            results = []
            for name, task in (
                ("lore_prepare", REPEAT),
                ("lore_prepare", AREA),
                ("lore_prepare", UNRELATED),
                ("lore_explain", AREA),
            ):
                called = await client.call_tool(name, {"task": task}, read_timeout_seconds=60)
                assert not called.is_error, called.content
                assert called.structured_content is not None
                results.append(called.structured_content)
            return results[0], results[1], results[2], results[3]

    repeat, area, unrelated, explained = anyio.run(main)
    assert [(e["id"], e["tier"]) for e in repeat["experiences"]][:1] == [("exp-1", "match")]
    assert repeat["experiences"][0]["confidence"] >= MINILM_GRADING.match
    assert {e["tier"] for e in area["experiences"]} == {"related"}
    for item in [*repeat["experiences"], *area["experiences"]]:
        _keys_ok(item)
    assert unrelated["empty"]
    assert unrelated["experiences"] == []
    served = [c for c in explained["candidates"] if c["served"]]
    assert served
    assert {c["tier"] for c in served} == {"related"}
    assert all(MINILM_GRADING.related <= c["confidence"] <= 1.0 for c in served)
    assert explained["match_threshold"] == MINILM_GRADING.match


def test_the_keyword_floor_serves_what_clears_it_as_a_match_without_a_confidence(tmp_path):
    with SqliteMemoryStore(tmp_path / "m.db") as store:
        _seed(store)
        store.connection.execute("DELETE FROM experience_vectors")
        brief = store.prepare(PrepareRequest(task=REFUND))
    assert [(e.tier, e.confidence) for e in brief.experiences][:1] == [("match", None)]
