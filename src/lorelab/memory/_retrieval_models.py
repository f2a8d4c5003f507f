"""Requests and results of the retrieval operations: validity, feedback, explain, reindex."""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field

from lorelab._model import InputModel, OutputModel

ValidityState = Literal["trusted", "superseded", "contradicted", "deprecated"]
Rating = Literal["helpful", "ignored", "misleading", "harmful"]
Tier = Literal["match", "related"]
TIER_DOC: Final = (
    "match: the same problem as this task (follow it); related: the same component or area, "
    "another problem (context, not instructions)."
)
CONFIDENCE_DOC: Final = (
    "Calibrated probability in [0, 1] that the item addresses the task; null without vectors."
)


class ValidityRequest(InputModel):
    """Mark an experience or Skill trusted again, or withhold it from briefs and plans."""

    item_id: str = Field(description="exp-N or skill-N.")
    state: ValidityState
    reason: str | None = Field(
        default=None,
        max_length=2000,
        description="Why (required for every state but trusted); shown by show and explain.",
    )
    superseded_by: str | None = Field(
        default=None, description="The item that replaces it (superseded only): exp-N or skill-N."
    )


class ValidityResult(OutputModel):
    item_id: str
    state: ValidityState
    state_before: ValidityState
    reason: str | None
    superseded_by: str | None
    changed_at: str


class FeedbackRequest(InputModel):
    """How a served experience turned out for the task it was served for."""

    experience_id: str = Field(description="exp-N, as the brief listed it.")
    rating: Rating
    brief_id: str | None = Field(default=None, description="The brief that served it.")
    note: str | None = Field(default=None, max_length=2000)


class FeedbackCounts(OutputModel):
    helpful: int
    ignored: int
    misleading: int
    harmful: int


class FeedbackResult(OutputModel):
    experience_id: str
    rating: Rating
    counts: FeedbackCounts
    confidence_shift: float = Field(description="Added to the confidence logit from now on.")
    rank_factor: float = Field(description="Multiplies the fused score from now on.")
    withheld: bool = Field(description="Repeated harm: withheld from briefs from now on.")


class ExplainRequest(InputModel):
    """A task to explain retrieval for, without recording a brief."""

    task: str = Field(min_length=1, max_length=8000)
    project: str | None = Field(default=None, max_length=400)


class ExplainCandidate(OutputModel):
    id: str
    task: str
    recorded_by: str | None = Field(
        default=None,
        description="The name of the `lorelab serve` token that recorded it; null: no token.",
    )
    lexical: float = Field(description="IDF-weighted share of the task's informative terms held.")
    matched_terms: list[str]
    bm25: float | None = Field(description="SQLite BM25 (lower is better); null: no term match.")
    semantic: float | None = Field(description="Cosine similarity; null: no stored vector.")
    fused: float = Field(description="Reciprocal rank fusion score, times the feedback factor.")
    confidence: float | None = Field(
        description=CONFIDENCE_DOC + " Null for a candidate that was not graded (withheld, or "
        "not among the first trusted candidates) and in keyword-only retrieval."
    )
    tier: Tier | None = Field(description=TIER_DOC + " Null: not served.")
    agreement: float | None
    margin: float | None
    validity: ValidityState
    validity_reason: str | None
    feedback: FeedbackCounts
    served: bool
    reason: str


class ExplainResult(OutputModel):
    task: str
    project: str | None
    mode: Literal["hybrid", "lexical"] = Field(
        description="hybrid: BM25 and embeddings; lexical: keyword floor only (no vectors yet: "
        "run lorelab memory reindex)."
    )
    threshold: float | None = Field(description="The related threshold (the serving one).")
    match_threshold: float | None = Field(description="The match threshold; null: lexical.")
    empty: bool
    reason: str | None
    candidates: list[ExplainCandidate]


class ReindexRequest(InputModel):
    """Compute the vector of every experience and lesson that has none."""

    model: Literal["minilm", "wordllama"] | None = Field(
        default=None,
        description=(
            "The embedding model to compute vectors of, and switch the store to once every "
            "item has one (default: the store's own model)."
        ),
    )


class ReindexResult(OutputModel):
    model: str
    experiences: int = Field(description="Experiences given a vector now.")
    lessons: int = Field(description="Lessons given a vector now.")
