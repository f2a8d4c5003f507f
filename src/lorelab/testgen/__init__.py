"""TestLore: memory-guided test generation with architect, author and reviewer roles.

Lessons (validated historical tests) are recalled from the memory store, three role calls
generate tests, and candidate validation decides whether anything reaches the project.
"""

from lorelab._model import RunnerName
from lorelab.testgen._generate import CallSettings, GenerationTask, generate
from lorelab.testgen._learn import (
    DEFAULT_LEARN_RUNS,
    learn,
    lesson_request,
    read_example,
    validate_example,
)
from lorelab.testgen._models import (
    CandidateValidation,
    GenerateResult,
    Generation,
    HistoricalExample,
    LearnResult,
    Recall,
)
from lorelab.testgen._pipeline import GenerateOptions, generate_for_project
from lorelab.testgen._project import detect_runner, read_project, select_sources
from lorelab.testgen._recall import DEFAULT_K, recall_lessons
from lorelab.testgen._validate import validate_candidates

__all__ = [
    "DEFAULT_K",
    "DEFAULT_LEARN_RUNS",
    "CallSettings",
    "CandidateValidation",
    "GenerateOptions",
    "GenerateResult",
    "Generation",
    "GenerationTask",
    "HistoricalExample",
    "LearnResult",
    "Recall",
    "RunnerName",
    "detect_runner",
    "generate",
    "generate_for_project",
    "learn",
    "lesson_request",
    "read_example",
    "read_project",
    "recall_lessons",
    "select_sources",
    "validate_candidates",
    "validate_example",
]
