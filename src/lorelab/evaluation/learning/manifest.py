"""The learning evaluation's manifest: its models, its JSON Schema, and every rule a manifest
must satisfy before anything runs (limits, canonical paths, declared cases, exact leakage)."""

from __future__ import annotations

import ast
import hashlib
import keyword
import os
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any, Final, Literal

from pydantic import Field

from lorelab._model import TEST_PATH_SHAPES, RecordModel, RunnerName
from lorelab.errors import PathError, SchemaError
from lorelab.io import read_model
from lorelab.workspace import FileEntry, check_distinct

MAX_HISTORY: Final = 8
MAX_SPECIFICATIONS: Final = 12
MAX_DEFECTS: Final = 8
ID_PATTERN: Final = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"

_NAME: Final = r"[a-z][a-z0-9_]{0,63}"
_SOURCE_PATH: Final[dict[str, re.Pattern[str]]] = {
    "pytest": re.compile(rf"src/(?P<name>{_NAME})\.py"),
    "node": re.compile(rf"src/(?P<name>{_NAME})\.js"),
}
_TEST_PATH: Final[dict[str, re.Pattern[str]]] = {
    "pytest": re.compile(rf"tests/test_(?P<name>{_NAME})\.py"),
    "node": re.compile(rf"test/(?P<name>{_NAME})\.test\.js"),
}
_SOURCE_SHAPE: Final = {"pytest": "src/<name>.py", "node": "src/<name>.js"}

# Files that would turn a specification into something other than source and tests: package
# manifests, dependency installs, and test-runner configuration that runs code of its own.
_FORBIDDEN_NAMES: Final = frozenset(
    {
        "package.json",
        "package-lock.json",
        "npm-shrinkwrap.json",
        "yarn.lock",
        "pnpm-lock.yaml",
        ".npmrc",
        "pyproject.toml",
        "setup.py",
        "setup.cfg",
        "pipfile",
        "pipfile.lock",
        "poetry.lock",
        "conftest.py",
        "pytest.ini",
        "tox.ini",
        "makefile",
        "dockerfile",
    }
)
_FORBIDDEN_PATTERN: Final = re.compile(r"requirements.*\.(txt|in)|constraints.*\.txt|.*\.(sh|pth)")

# ``test("title", ...)`` / ``it('title', ...)`` with a plain string literal as the title.
_JS_TEST_CALL: Final = re.compile(
    r"(?<![\w$.])(?:test|it)\s*\(\s*(?P<q>[\"'`])(?P<title>(?:\\.|(?!(?P=q)).)*)(?P=q)",
    re.DOTALL,
)


class Defect(RecordModel):
    """A planted defect: source files that replace the fixture's own, and the cases they break."""

    id: str = Field(
        pattern=ID_PATTERN,
        description="Unique across the whole manifest; 1-64 letters, digits, '.', '_' or '-'.",
    )
    label: str | None = Field(
        default=None,
        max_length=200,
        description="What the defect does wrong, in words; the expected cases must test it.",
    )
    files: list[FileEntry] = Field(
        min_length=1,
        description="Replacements for existing source files of the fixture (same paths).",
    )
    expected_failing_cases: list[str] = Field(
        min_length=1,
        description=(
            "Reference case ids this defect must fail, as the runner reports them: "
            "'tests/test_x.py::test_y' (pytest) or 'test/x.test.js::<test title>' (node). "
            "Every other reference case must pass."
        ),
    )


class Fixture(RecordModel):
    """One evaluation specification: requirements, reference source and tests, planted defects."""

    id: str = Field(
        pattern=ID_PATTERN,
        description="The specification id; unique across the whole manifest.",
    )
    requirements: str = Field(
        min_length=1,
        description=(
            "The requirements text given to the worker; examples in the grammar of "
            "docs/protocol.md ('Examples:' and 'Edge cases:')."
        ),
    )
    files: list[FileEntry] = Field(
        min_length=1, description="Reference source files (canonical source paths)."
    )
    reference_tests: list[FileEntry] = Field(
        min_length=1,
        description="Independent reference tests; never shown to a worker or stored in memory.",
    )
    defects: list[Defect] = Field(
        min_length=1, max_length=MAX_DEFECTS, description="Planted defects (at most 8)."
    )


class HistoryEntry(RecordModel):
    """A past specification with its tests: the raw material of the frozen memory."""

    id: str = Field(pattern=ID_PATTERN, description="The history item's id; unique.")
    specification_id: str = Field(
        pattern=ID_PATTERN,
        description="The past specification this item comes from; never an evaluated one.",
    )
    requirements: str = Field(min_length=1, description="The past specification's requirements.")
    files: list[FileEntry] = Field(
        min_length=1, description="The past specification's source files."
    )
    tests: list[FileEntry] = Field(
        min_length=1,
        description="Tests written for it; validated (they must pass stably) before use.",
    )


class LearningManifest(RecordModel):
    """The input of ``lorelab eval learning``: history for memory and fixtures to evaluate."""

    schema_version: Literal[1] = Field(description="Manifest format version; always 1.")
    id: str = Field(
        min_length=1, max_length=128, pattern=r"^[^\x00-\x1f]+$", description="Manifest id."
    )
    runner: RunnerName = Field(description="Test runner of every specification: pytest or node.")
    history: list[HistoryEntry] = Field(
        max_length=MAX_HISTORY, description="Historical specifications (at most 8)."
    )
    fixtures: list[Fixture] = Field(
        min_length=1,
        max_length=MAX_SPECIFICATIONS,
        description="Evaluation specifications (at most 12).",
    )

    def fixture(self, fixture_id: str) -> Fixture:
        """The fixture with id ``fixture_id`` (a :class:`KeyError` if there is none)."""
        for fixture in self.fixtures:
            if fixture.id == fixture_id:
                return fixture
        raise KeyError(fixture_id)


def manifest_schema() -> dict[str, Any]:
    """The manifest's JSON Schema (draft 2020-12), generated from the models."""
    schema = LearningManifest.model_json_schema(by_alias=True)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}


def load_manifest(path: str | os.PathLike[str]) -> LearningManifest:
    """Read a manifest (bounded, 2 MiB), validate its shape, then every rule; errors exit 2."""
    manifest = read_model(path, LearningManifest, "manifest")
    validate_manifest(manifest, os.fspath(path))
    return manifest


def validate_manifest(manifest: LearningManifest, source: str = "manifest") -> None:
    """Raise one :class:`SchemaError` for the first rule ``manifest`` breaks, naming entries."""
    violations = find_violations(manifest)
    if violations:
        more = f" (and {len(violations) - 1} more)" if len(violations) > 1 else ""
        raise SchemaError(f"{source}: {violations[0]}{more}")


def sha256_text(text: str) -> str:
    """Hex SHA-256 of ``text``'s UTF-8 bytes (lone surrogates escaped, so any str hashes)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def is_source_path(path: str, runner: RunnerName) -> bool:
    """Whether ``path`` is a canonical source path for ``runner``."""
    return _module_name(_SOURCE_PATH[runner], path) is not None


def is_test_path(path: str, runner: RunnerName) -> bool:
    """Whether ``path`` is a canonical test path for ``runner``."""
    return _module_name(_TEST_PATH[runner], path) is not None


def declared_cases(tests: Iterable[FileEntry], runner: RunnerName) -> dict[str, frozenset[str]]:
    """The test names each file declares, by path; a file that does not parse maps to none.

    pytest: module-level ``test*`` functions and ``test*`` methods of ``Test*`` classes
    (as ``Class::method``); node: the string-literal titles of ``test(...)`` and ``it(...)``.
    """
    return {entry.path: _declared_names(entry.content, runner) for entry in tests}


def _module_name(pattern: re.Pattern[str], path: str) -> str | None:
    match = pattern.fullmatch(path)
    if match is None or keyword.iskeyword(match["name"]):
        return None
    return match["name"]


def _declared_names(content: str, runner: RunnerName) -> frozenset[str]:
    if runner == "node":
        return frozenset(match["title"] for match in _JS_TEST_CALL.finditer(content))
    try:
        tree = ast.parse(content)
    except (SyntaxError, ValueError):
        return frozenset()
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
            "test"
        ):
            names.add(node.name)
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            names.update(
                f"{node.name}::{item.name}"
                for item in node.body
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
                and item.name.startswith("test")
            )
    return frozenset(names)


def _parses(content: str, runner: RunnerName) -> bool:
    if runner == "node":
        return True
    try:
        ast.parse(content)
    except (SyntaxError, ValueError):
        return False
    return True


def _path_problem(path: str, runner: RunnerName, kind: Literal["source", "test"]) -> str | None:
    base = path.rsplit("/", 1)[-1].lower()
    if base in _FORBIDDEN_NAMES or _FORBIDDEN_PATTERN.fullmatch(base):
        return (
            f"{path!r} is a package manifest, dependency install or runner configuration; "
            "only source and test files are allowed"
        )
    pattern = _SOURCE_PATH[runner] if kind == "source" else _TEST_PATH[runner]
    if _module_name(pattern, path) is None:
        shape = _SOURCE_SHAPE[runner] if kind == "source" else TEST_PATH_SHAPES[runner]
        return (
            f"{path!r} is not a canonical {kind} path for runner {runner} "
            f"({shape}, <name> a lowercase identifier)"
        )
    return None


def _content_problem(entry: FileEntry) -> str | None:
    if "\x00" in entry.content:
        return f"{entry.path!r} contains NUL (binary content is not allowed)"
    try:
        entry.content.encode("utf-8")
    except UnicodeEncodeError:
        return f"{entry.path!r} is not valid UTF-8 text (lone surrogate)"
    return None


def _check_files(
    owner: str,
    what: str,
    files: Sequence[FileEntry],
    runner: RunnerName,
    kind: Literal["source", "test"],
) -> list[str]:
    problems: list[str] = []
    for entry in files:
        problem = _path_problem(entry.path, runner, kind) or _content_problem(entry)
        if problem is not None:
            problems.append(f"{owner} {what}: {problem}")
    try:
        check_distinct(entry.path for entry in files)
    except PathError as exc:
        problems.append(f"{owner} {what}: {exc}")
    return problems


def _check_tests(
    owner: str, what: str, files: Sequence[FileEntry], runner: RunnerName
) -> list[str]:
    problems: list[str] = []
    for entry in files:
        if not _parses(entry.content, runner):
            problems.append(f"{owner} {what}: {entry.path!r} does not parse as Python")
        elif not _declared_names(entry.content, runner):
            problems.append(f"{owner} {what}: {entry.path!r} declares no test")
    return problems


def _case_problem(case_id: str, cases: dict[str, frozenset[str]], runner: RunnerName) -> str | None:
    path, sep, name = case_id.partition("::")
    if not sep or not name:
        return f"case id {case_id!r} is not '<test file>::<test name>'"
    if path not in cases:
        return f"case id {case_id!r} names {path!r}, which is not a reference test file"
    # A parametrized pytest case is reported as name[params]; its base must be declared.
    base = name.split("[", 1)[0] if runner == "pytest" and name.endswith("]") else name
    if base not in cases[path]:
        return f"case id {case_id!r} names no test declared in {path!r}"
    return None


def _check_defect(fixture: Fixture, defect: Defect, runner: RunnerName) -> list[str]:
    owner = f"defect {defect.id!r} of fixture {fixture.id!r}"
    problems = _check_files(owner, "files", defect.files, runner, "source")
    reference = {entry.path: entry.content for entry in fixture.files}
    for entry in defect.files:
        if entry.path not in reference:
            problems.append(
                f"{owner}: {entry.path!r} does not replace an existing source file of the fixture"
            )
        elif reference[entry.path] == entry.content:
            problems.append(f"{owner}: {entry.path!r} is identical to the reference source")
    cases = declared_cases(fixture.reference_tests, runner)
    seen: set[str] = set()
    for case_id in defect.expected_failing_cases:
        if case_id in seen:
            problems.append(f"{owner}: expected case {case_id!r} is listed twice")
        seen.add(case_id)
        problem = _case_problem(case_id, cases, runner)
        if problem is not None:
            problems.append(f"{owner}: {problem}")
    return problems


def _check_specification(
    owner: str,
    requirements: str,
    files: Sequence[FileEntry],
    tests_key: str,
    tests: Sequence[FileEntry],
    runner: RunnerName,
) -> list[str]:
    """What a fixture and a history entry must both be: requirements, sources and tests."""
    problems: list[str] = []
    if not requirements.strip():
        problems.append(f"{owner}: requirements are blank")
    problems += _check_files(owner, "files", files, runner, "source")
    problems += _check_files(owner, tests_key, tests, runner, "test")
    problems += _check_tests(owner, tests_key, tests, runner)
    return problems


def _check_fixture(fixture: Fixture, runner: RunnerName) -> list[str]:
    problems = _check_specification(
        f"fixture {fixture.id!r}",
        fixture.requirements,
        fixture.files,
        "referenceTests",
        fixture.reference_tests,
        runner,
    )
    variants: dict[tuple[tuple[str, str], ...], str] = {}
    for defect in fixture.defects:
        problems += _check_defect(fixture, defect, runner)
        key = tuple(sorted((entry.path, entry.content) for entry in defect.files))
        if key in variants:
            problems.append(
                f"defects {variants[key]!r} and {defect.id!r} of fixture {fixture.id!r} "
                "replace the same files with the same content"
            )
        variants.setdefault(key, defect.id)
    return problems


def _check_history(entry: HistoryEntry, runner: RunnerName) -> list[str]:
    return _check_specification(
        f"history {entry.id!r}", entry.requirements, entry.files, "tests", entry.tests, runner
    )


def _overlaps(kind: str, claims: Iterable[tuple[str, str, str]]) -> list[str]:
    """Report every key claimed by more than one specification.

    ``claims`` holds ``(key, specification, entry)``: ``specification`` is what must not share
    the key, ``entry`` names where the key was seen (for the message).
    """
    owners: dict[str, dict[str, str]] = defaultdict(dict)
    for key, specification, entry in claims:
        owners[key].setdefault(specification, entry)
    problems: list[str] = []
    for key, by_spec in owners.items():
        if len(by_spec) > 1:
            entries = " and ".join(by_spec.values())
            if kind == "id":
                problems.append(f"ids must not overlap: {entries} share the id {key!r}")
            else:
                problems.append(f"exact leakage: {entries} share the {kind} {key[:12]}...")
    return problems


def _leakage(manifest: LearningManifest) -> list[str]:
    ids: list[tuple[str, str, str]] = []
    requirements: list[tuple[str, str, str]] = []
    sources: list[tuple[str, str, str]] = []
    tests: list[tuple[str, str, str]] = []
    for index, item in enumerate(manifest.history):
        spec = f"history#{index}"
        name = f"history {item.id!r}"
        ids.append((item.id, spec, name))
        ids.append((item.specification_id, spec, name))
        requirements.append((sha256_text(item.requirements), spec, name))
        sources += [(sha256_text(f.content), spec, f"{name} {f.path!r}") for f in item.files]
        tests += [(sha256_text(f.content), spec, f"{name} {f.path!r}") for f in item.tests]
    for index, fixture in enumerate(manifest.fixtures):
        spec = f"fixture#{index}"
        name = f"fixture {fixture.id!r}"
        ids.append((fixture.id, spec, name))
        requirements.append((sha256_text(fixture.requirements), spec, name))
        sources += [(sha256_text(f.content), spec, f"{name} {f.path!r}") for f in fixture.files]
        tests += [
            (sha256_text(f.content), spec, f"{name} {f.path!r}") for f in fixture.reference_tests
        ]
        seen_defects: set[str] = set()
        for defect in fixture.defects:
            label = f"defect {defect.id!r} of {name}"
            # Two defects of one fixture with one id are one problem, not a leak.
            if defect.id not in seen_defects:
                ids.append((defect.id, f"{spec}/{defect.id}", label))
            seen_defects.add(defect.id)
            sources += [(sha256_text(f.content), spec, f"{label} {f.path!r}") for f in defect.files]
    problems: list[str] = []
    for fixture in manifest.fixtures:
        counts: dict[str, int] = defaultdict(int)
        for defect in fixture.defects:
            counts[defect.id] += 1
        problems += [
            f"fixture {fixture.id!r}: defect id {defect_id!r} is used {count} times"
            for defect_id, count in counts.items()
            if count > 1
        ]
    problems += _overlaps("id", ids)
    problems += _overlaps("requirements hash", requirements)
    problems += _overlaps("source hash", sources)
    problems += _overlaps("test hash", tests)
    return problems


def find_violations(manifest: LearningManifest) -> list[str]:
    """Every rule ``manifest`` breaks, one line each, in a stable order (empty when valid)."""
    problems: list[str] = []
    for entry in manifest.history:
        problems += _check_history(entry, manifest.runner)
    for fixture in manifest.fixtures:
        problems += _check_fixture(fixture, manifest.runner)
    problems += _leakage(manifest)
    return problems
