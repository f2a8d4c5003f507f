"""Verified memory for coding agents: experiences, briefs, Skills, plans, Dreams and lessons.

Callers depend on :class:`MemoryStore`; :func:`open_store` returns the embedded SQLite store
at the documented location. :data:`OPERATIONS` is the table of operations that ``lorelab mcp``
and ``lorelab memory`` are both built from. Every store operation takes one request model and
returns one result model.

Every public name is loaded on first use: importing one submodule (the redaction that a hook
needs, say) does not load the store, the models of every operation and the worker-based Dream.
"""

from __future__ import annotations

import typing

from lorelab._lazy import lazy_exports as _lazy_exports

if typing.TYPE_CHECKING:
    from lorelab.memory._briefs import briefs_unrecorded as briefs_unrecorded
    from lorelab.memory._context import CheckpointRequest as CheckpointRequest
    from lorelab.memory._context import CheckpointResult as CheckpointResult
    from lorelab.memory._context import RecoverRequest as RecoverRequest
    from lorelab.memory._context import RecoverResult as RecoverResult
    from lorelab.memory._dream_worker import WorkerDreamResult as WorkerDreamResult
    from lorelab.memory._dream_worker import dream_with_worker as dream_with_worker
    from lorelab.memory._experiences import recording_as as recording_as
    from lorelab.memory._item_models import EvaluationLock as EvaluationLock
    from lorelab.memory._item_models import Experience as Experience
    from lorelab.memory._item_models import Item as Item
    from lorelab.memory._item_models import Lesson as Lesson
    from lorelab.memory._item_models import ListRequest as ListRequest
    from lorelab.memory._item_models import ListResult as ListResult
    from lorelab.memory._item_models import ShowRequest as ShowRequest
    from lorelab.memory._item_models import ShowResult as ShowResult
    from lorelab.memory._location import HOME_ENV as HOME_ENV
    from lorelab.memory._location import memory_home as memory_home
    from lorelab.memory._location import open_store as open_store
    from lorelab.memory._location import store_path as store_path
    from lorelab.memory._models import Brief as Brief
    from lorelab.memory._models import Candidate as Candidate
    from lorelab.memory._models import CandidateProposal as CandidateProposal
    from lorelab.memory._models import CheckRequest as CheckRequest
    from lorelab.memory._models import CheckRun as CheckRun
    from lorelab.memory._models import ClaimedModel as ClaimedModel
    from lorelab.memory._models import CommandRun as CommandRun
    from lorelab.memory._models import DreamRequest as DreamRequest
    from lorelab.memory._models import DreamResult as DreamResult
    from lorelab.memory._models import OutcomeRequest as OutcomeRequest
    from lorelab.memory._models import OutcomeResult as OutcomeResult
    from lorelab.memory._models import PrepareRequest as PrepareRequest
    from lorelab.memory._models import PromoteCandidateRequest as PromoteCandidateRequest
    from lorelab.memory._models import PromoteRequest as PromoteRequest
    from lorelab.memory._models import RecordRequest as RecordRequest
    from lorelab.memory._models import RecordResult as RecordResult
    from lorelab.memory._models import Skill as Skill
    from lorelab.memory._models import SkillHealthRequest as SkillHealthRequest
    from lorelab.memory._models import SkillHealthResult as SkillHealthResult
    from lorelab.memory._models import SkillStep as SkillStep
    from lorelab.memory._models import StartRequest as StartRequest
    from lorelab.memory._models import StartResult as StartResult
    from lorelab.memory._models import Verification as Verification
    from lorelab.memory._models import WorkerDreamRequest as WorkerDreamRequest
    from lorelab.memory._models import WorkerProvenance as WorkerProvenance
    from lorelab.memory._operations import ALLOW_CHECKS_ENV as ALLOW_CHECKS_ENV
    from lorelab.memory._operations import OPERATIONS as OPERATIONS
    from lorelab.memory._operations import Operation as Operation
    from lorelab.memory._operations import Target as Target
    from lorelab.memory._project import find_project as find_project
    from lorelab.memory._protocol import MemoryStore as MemoryStore
    from lorelab.memory._redact import redact as redact
    from lorelab.memory._relevance import DEFAULT_POLICY as DEFAULT_POLICY
    from lorelab.memory._relevance import RelevancePolicy as RelevancePolicy
    from lorelab.memory._requests import AddLessonRequest as AddLessonRequest
    from lorelab.memory._requests import AddLessonResult as AddLessonResult
    from lorelab.memory._requests import CandidateCheckRequest as CandidateCheckRequest
    from lorelab.memory._requests import CandidateRequest as CandidateRequest
    from lorelab.memory._requests import ExperiencesResult as ExperiencesResult
    from lorelab.memory._requests import LessonHit as LessonHit
    from lorelab.memory._requests import LessonRequest as LessonRequest
    from lorelab.memory._requests import LessonSearchRequest as LessonSearchRequest
    from lorelab.memory._requests import LessonSearchResult as LessonSearchResult
    from lorelab.memory._requests import LessonsRequest as LessonsRequest
    from lorelab.memory._requests import LessonsResult as LessonsResult
    from lorelab.memory._requests import LockClearRequest as LockClearRequest
    from lorelab.memory._requests import LockRequest as LockRequest
    from lorelab.memory._requests import LocksRequest as LocksRequest
    from lorelab.memory._requests import LocksResult as LocksResult
    from lorelab.memory._requests import ProposalsRequest as ProposalsRequest
    from lorelab.memory._requests import ProposalsResult as ProposalsResult
    from lorelab.memory._requests import RecordManyRequest as RecordManyRequest
    from lorelab.memory._requests import RecordManyResult as RecordManyResult
    from lorelab.memory._requests import SkillsExportRequest as SkillsExportRequest
    from lorelab.memory._requests import SkillsExportResult as SkillsExportResult
    from lorelab.memory._requests import SkillsRequest as SkillsRequest
    from lorelab.memory._requests import SkillsResult as SkillsResult
    from lorelab.memory._requests import SnapshotRequest as SnapshotRequest
    from lorelab.memory._requests import SnapshotResult as SnapshotResult
    from lorelab.memory._requests import VerifiedExperiencesRequest as VerifiedExperiencesRequest
    from lorelab.memory._retrieval_models import ExplainCandidate as ExplainCandidate
    from lorelab.memory._retrieval_models import ExplainRequest as ExplainRequest
    from lorelab.memory._retrieval_models import ExplainResult as ExplainResult
    from lorelab.memory._retrieval_models import FeedbackCounts as FeedbackCounts
    from lorelab.memory._retrieval_models import FeedbackRequest as FeedbackRequest
    from lorelab.memory._retrieval_models import FeedbackResult as FeedbackResult
    from lorelab.memory._retrieval_models import ReindexRequest as ReindexRequest
    from lorelab.memory._retrieval_models import ReindexResult as ReindexResult
    from lorelab.memory._retrieval_models import ValidityRequest as ValidityRequest
    from lorelab.memory._retrieval_models import ValidityResult as ValidityResult
    from lorelab.memory._sqlite import SqliteMemoryStore as SqliteMemoryStore
    from lorelab.memory._text import unique_terms as unique_terms

_EXPORTS: typing.Final = {
    "lorelab.memory._briefs": ("briefs_unrecorded",),
    "lorelab.memory._context": (
        "CheckpointRequest",
        "CheckpointResult",
        "RecoverRequest",
        "RecoverResult",
    ),
    "lorelab.memory._dream_worker": (
        "WorkerDreamResult",
        "dream_with_worker",
    ),
    "lorelab.memory._experiences": ("recording_as",),
    "lorelab.memory._location": (
        "HOME_ENV",
        "memory_home",
        "open_store",
        "store_path",
    ),
    "lorelab.memory._item_models": (
        "EvaluationLock",
        "Experience",
        "Item",
        "Lesson",
        "ListRequest",
        "ListResult",
        "ShowRequest",
        "ShowResult",
    ),
    "lorelab.memory._models": (
        "Brief",
        "Candidate",
        "CandidateProposal",
        "CheckRequest",
        "CheckRun",
        "ClaimedModel",
        "CommandRun",
        "DreamRequest",
        "DreamResult",
        "OutcomeRequest",
        "OutcomeResult",
        "PrepareRequest",
        "PromoteCandidateRequest",
        "PromoteRequest",
        "RecordRequest",
        "RecordResult",
        "Skill",
        "SkillHealthRequest",
        "SkillHealthResult",
        "SkillStep",
        "StartRequest",
        "StartResult",
        "Verification",
        "WorkerDreamRequest",
        "WorkerProvenance",
    ),
    "lorelab.memory._operations": (
        "ALLOW_CHECKS_ENV",
        "OPERATIONS",
        "Operation",
        "Target",
    ),
    "lorelab.memory._protocol": ("MemoryStore",),
    "lorelab.memory._redact": ("redact",),
    "lorelab.memory._relevance": (
        "DEFAULT_POLICY",
        "RelevancePolicy",
    ),
    "lorelab.memory._requests": (
        "AddLessonRequest",
        "AddLessonResult",
        "CandidateCheckRequest",
        "CandidateRequest",
        "ExperiencesResult",
        "LessonHit",
        "LessonRequest",
        "LessonSearchRequest",
        "LessonSearchResult",
        "LessonsRequest",
        "LessonsResult",
        "LockClearRequest",
        "LockRequest",
        "LocksRequest",
        "LocksResult",
        "ProposalsRequest",
        "ProposalsResult",
        "RecordManyRequest",
        "RecordManyResult",
        "SkillsExportRequest",
        "SkillsExportResult",
        "SkillsRequest",
        "SkillsResult",
        "SnapshotRequest",
        "SnapshotResult",
        "VerifiedExperiencesRequest",
    ),
    "lorelab.memory._retrieval_models": (
        "ExplainCandidate",
        "ExplainRequest",
        "ExplainResult",
        "FeedbackCounts",
        "FeedbackRequest",
        "FeedbackResult",
        "ReindexRequest",
        "ReindexResult",
        "ValidityRequest",
        "ValidityResult",
    ),
    "lorelab.memory._project": ("find_project",),
    "lorelab.memory._sqlite": ("SqliteMemoryStore",),
    "lorelab.memory._text": ("unique_terms",),
}
"""Every public name, by the module it lives in: ``__all__`` and the lazy loading come from this
table, and the imports above (for type checkers) name the same modules and names."""

_WHERE: typing.Final = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = sorted(_WHERE)

__getattr__, __dir__ = _lazy_exports(__name__, globals(), _WHERE)
