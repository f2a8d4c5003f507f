"""TestLore: memory-guided test generation with architect, author and reviewer roles.

Lessons (validated historical tests) are recalled from the memory store, three role calls
generate tests, and candidate validation decides whether anything reaches the project.
"""

from lorelab.testgen._apply import apply_tests, keep_passing
from lorelab.testgen._generate import CallSettings, GenerationTask, generate
from lorelab.testgen._learn import (
    DEFAULT_LEARN_RUNS,
    files_digest,
    learn,
    read_example,
    validate_example,
)
from lorelab.testgen._models import (
    ApplyResult,
    CandidateValidation,
    CaseVerdict,
    ExampleValidation,
    GenerateResult,
    Generation,
    HistoricalExample,
    LearnResult,
    Recall,
    RecalledLesson,
    Review,
    RunnerName,
)
from lorelab.testgen._pipeline import GenerateOptions, generate_for_project
from lorelab.testgen._project import ProjectFiles, detect_runner, read_project, select_sources
from lorelab.testgen._recall import DEFAULT_K, MIN_SHARED_TERMS, recall_lessons, test_names
from lorelab.testgen._validate import path_violations, validate_candidates

__all__ = [
    "DEFAULT_K",
    "DEFAULT_LEARN_RUNS",
    "MIN_SHARED_TERMS",
    "ApplyResult",
    "CallSettings",
    "CandidateValidation",
    "CaseVerdict",
    "ExampleValidation",
    "GenerateOptions",
    "GenerateResult",
    "Generation",
    "GenerationTask",
    "HistoricalExample",
    "LearnResult",
    "ProjectFiles",
    "Recall",
    "RecalledLesson",
    "Review",
    "RunnerName",
    "apply_tests",
    "detect_runner",
    "files_digest",
    "generate",
    "generate_for_project",
    "keep_passing",
    "learn",
    "path_violations",
    "read_example",
    "read_project",
    "recall_lessons",
    "select_sources",
    "test_names",
    "validate_candidates",
    "validate_example",
]
