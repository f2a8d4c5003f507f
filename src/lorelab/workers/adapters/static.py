"""The static worker: a deterministic, rule-based architect and reviewer with no model
(``python -m lorelab.workers.adapters.static``).

It is no test double: its decisions are real, the same for the same payload, and written down
in docs/workers.md. As an **architect** it plans one case per function signature the
specification states (``name(params) -> returns, in module src/<m>.py``; the module's public
functions when the text states none), one per ``Examples:`` item and one per ``Edge cases:``
item. As a **reviewer** it approves Python tests only when every test file passes every rule of
:data:`RULES`; a rejection names each file, test and rule broken. It ignores lessons, so both
arms of an evaluation get the same plan and the same review. It reports no usage and claims no
model (its evidence kind is ``live``); every answer notes on stderr that it is rule-based.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Final

from lorelab.workers.adapters._agent import AdapterFailure, Answer, Request, run_adapter
from lorelab.workers.roles import ArchitectPayload, Case, ReviewerPayload, Task
from lorelab.workspace import FileEntry

RULES_VERSION: Final = "lorelab.static-rules/1"
RULE_BASED_NOTE: Final = f"rule-based worker ({RULES_VERSION}): no model, decisions from rules"
RULES: Final[tuple[str, ...]] = (
    "every file is a canonical pytest test path and parses as Python",
    "every file defines a test, and every test asserts (a non-constant assert or pytest.raises)",
    "imports only the module under test, pytest and the standard library",
    "uses only names the module under test defines",
    "no time, randomness, network, processes or dynamic code",
    "files only under a temporary directory (tmp_path, tmpdir, tempfile)",
)

_TEST_PATH: Final = re.compile(r"tests/test_[A-Za-z0-9_]+\.py")
_SOURCE_PATH: Final = re.compile(r"src/(?P<dotted>[A-Za-z_]\w*(?:/[A-Za-z_]\w*)*)\.py")
_SIGNATURE: Final = re.compile(
    r"(?<![\w.])(?P<name>[A-Za-z_]\w*)\((?P<params>[^()\n]*)\)"
    r"(?:\s*->\s*(?P<returns>[^\n]*?))?,\s*in module\s+(?P<path>src/[A-Za-z_][\w/]*\.py)"
)
_HEADERS: Final = {"examples:": "example", "edge cases:": "edge"}
_TAG: Final = re.compile(r"\[(?P<tag>[A-Za-z0-9_-]{1,40})\]\s+(?P<rest>.+)")

# Module-level attributes every module has, whatever its source defines.
_MODULE_DUNDERS: Final = frozenset(
    {"__name__", "__doc__", "__file__", "__dict__", "__spec__", "__loader__", "__package__"}
)
_TEMP_FIXTURES: Final = frozenset({"tmp_path", "tmpdir", "tmp_path_factory", "tmpdir_factory"})
_NETWORK_MODULES: Final = [
    "socket",
    "ssl",
    "http",
    "urllib",
    "ftplib",
    "smtplib",
    "poplib",
    "imaplib",
    "nntplib",
    "telnetlib",
    "xmlrpc",
    "socketserver",
    "webbrowser",
    "asyncore",
    "asynchat",
    "wsgiref",
]
# Whole standard-library modules a test may not import, and why.
_FORBIDDEN_MODULES: Final[dict[str, str]] = {
    "time": "time",
    "random": "randomness",
    "secrets": "randomness",
    "subprocess": "processes",
    "multiprocessing": "processes",
    "pty": "processes",
    **dict.fromkeys(_NETWORK_MODULES, "network"),
}
_OS_PROCESS_CALLS: Final = (
    "execv execve execvp execvpe execl execle execlp execlpe posix_spawn posix_spawnp "
    "spawnv spawnve spawnl"
)
# Single callables of allowed modules that bring in time, randomness, network or processes.
_FORBIDDEN_CALLABLES: Final[dict[str, str]] = {
    "datetime.datetime.now": "time",
    "datetime.datetime.today": "time",
    "datetime.datetime.utcnow": "time",
    "datetime.date.today": "time",
    "os.urandom": "randomness",
    "os.getrandom": "randomness",
    "uuid.uuid1": "randomness",
    "uuid.uuid4": "randomness",
    "asyncio.open_connection": "network",
    "asyncio.start_server": "network",
    "asyncio.open_unix_connection": "network",
    "asyncio.start_unix_server": "network",
    "asyncio.create_subprocess_exec": "processes",
    "asyncio.create_subprocess_shell": "processes",
    "os.system": "processes",
    "os.popen": "processes",
    "os.fork": "processes",
    "os.forkpty": "processes",
    "os.kill": "processes",
    "os.killpg": "processes",
    **dict.fromkeys((f"os.{name}" for name in _OS_PROCESS_CALLS.split()), "processes"),
    "builtins.exec": "dynamic code",
    "builtins.eval": "dynamic code",
    "builtins.compile": "dynamic code",
    "builtins.__import__": "dynamic code",
    "importlib.import_module": "dynamic code",
    "importlib.__import__": "dynamic code",
}
# Callables whose path arguments must lie under a temporary directory.
_PATH_CALLABLES: Final = frozenset(
    [
        "builtins.open",
        "io.open",
        "io.FileIO",
        "codecs.open",
        "os.open",
        "os.remove",
        "os.unlink",
        "os.rmdir",
        "os.removedirs",
        "os.mkdir",
        "os.makedirs",
        "os.rename",
        "os.renames",
        "os.replace",
        "os.listdir",
        "os.scandir",
        "os.walk",
        "os.chmod",
        "os.chown",
        "os.chdir",
        "os.link",
        "os.symlink",
        "os.truncate",
        "os.utime",
        "os.mkfifo",
        "glob.glob",
        "glob.iglob",
        "fileinput.input",
        "gzip.open",
        "bz2.open",
        "lzma.open",
        "tarfile.open",
        "zipfile.ZipFile",
        "shelve.open",
        "dbm.open",
        "sqlite3.connect",
        "logging.FileHandler",
    ]
)
_PATH_CONSTRUCTORS: Final = frozenset(
    {"pathlib.Path", "pathlib.PosixPath", "pathlib.WindowsPath", "pathlib.Path.home"}
    | {"pathlib.Path.cwd", "os.getcwd"}
)
_PATH_DERIVING: Final = frozenset(
    {"joinpath", "resolve", "absolute", "with_name", "with_suffix", "with_stem", "expanduser"}
)
# pathlib methods that touch the file system.
_PATH_IO: Final = frozenset(
    [
        "open",
        "read_text",
        "read_bytes",
        "write_text",
        "write_bytes",
        "unlink",
        "mkdir",
        "rmdir",
        "touch",
        "rename",
        "replace",
        "symlink_to",
        "hardlink_to",
        "chmod",
        "iterdir",
        "glob",
        "rglob",
        "exists",
        "is_file",
        "is_dir",
        "stat",
        "lstat",
        "readlink",
    ]
)
_BUILTINS: Final = frozenset(dir(builtins))


# --- architect -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Signature:
    """One function the specification (or, failing that, the source) declares."""

    name: str
    params: str
    returns: str | None
    path: str

    @property
    def text(self) -> str:
        """The signature as written: ``name(params) -> returns``."""
        arrow = f" -> {self.returns}" if self.returns else ""
        return f"{self.name}({self.params}){arrow}"


def spec_signatures(requirements: str) -> list[Signature]:
    """The ``name(params) [-> returns], in module src/<m>.py`` declarations of the text."""
    found: list[Signature] = []
    for match in _SIGNATURE.finditer(requirements):
        returns = (match["returns"] or "").strip() or None
        signature = Signature(match["name"], match["params"].strip(), returns, match["path"])
        if signature not in found:
            found.append(signature)
    return found


def source_signatures(task: Task) -> list[Signature]:
    """The public top-level functions of the task's Python sources, with their annotations."""
    found: list[Signature] = []
    for entry in sorted(task.source, key=lambda entry: entry.path):
        if not _SOURCE_PATH.fullmatch(entry.path):
            continue
        try:
            tree = ast.parse(entry.content)
        except (SyntaxError, ValueError):
            continue
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not (
                node.name.startswith("_")
            ):
                returns = ast.unparse(node.returns) if node.returns is not None else None
                found.append(Signature(node.name, ast.unparse(node.args), returns, entry.path))
    return found


@dataclass(frozen=True, slots=True)
class SpecItem:
    """One ``Examples:`` or ``Edge cases:`` item, as written."""

    section: str
    tag: str | None
    text: str


def spec_items(requirements: str) -> list[SpecItem]:
    """Every ``- ...`` item under an ``Examples:`` or ``Edge cases:`` header, in order.

    A section runs from its header to the next header or the first line that is neither blank
    nor an item. An edge case's ``[tag]`` is kept apart from its text.
    """
    items: list[SpecItem] = []
    section: str | None = None
    for line in requirements.splitlines():
        stripped = line.strip()
        header = _HEADERS.get(stripped.lower())
        if header is not None:
            section = header
            continue
        if not stripped or section is None:
            continue
        if not stripped.startswith("- "):
            section = None
            continue
        body = stripped[2:].strip()
        tagged = _TAG.fullmatch(body)
        tag = tagged["tag"].lower() if tagged else None
        if tagged is not None:
            body = tagged["rest"].strip()
        if body:
            items.append(SpecItem(section, tag, body))
    return items


def _identifier(text: str) -> str:
    return (re.sub(r"[^a-z0-9_]+", "_", text.lower()).strip("_") or "case")[:60]


def plan(task: Task, max_cases: int) -> tuple[list[Case], int]:
    """The architect's cases (signatures, then examples, then edge cases) and how many were
    left out by ``max_cases``."""
    signatures = spec_signatures(task.requirements) or source_signatures(task)
    cases: list[Case] = []
    for signature in signatures:
        returns = f" and check the {signature.returns} it returns" if signature.returns else ""
        cases.append(
            Case(
                name=f"signature_{_identifier(signature.name)}",
                intent=(
                    f"Call {signature.text} from {signature.path} with arguments of the "
                    f"declared types{returns}"
                )[:2000],
            )
        )
    counts = {"example": 0, "edge": 0}
    for item in spec_items(task.requirements):
        counts[item.section] += 1
        if item.section == "example":
            name, intent = f"example_{counts['example']}", item.text
        else:
            tag = item.tag or "case"
            name, intent = f"edge_{_identifier(tag)}_{counts['edge']}", f"[{tag}] {item.text}"
        cases.append(Case(name=name, intent=intent[:2000]))
    names: set[str] = set()
    unique: list[Case] = []
    for case in cases:
        if case.name not in names:
            names.add(case.name)
            unique.append(case)
    return unique[:max_cases], max(len(unique) - max_cases, 0)


def _architect(request: Request) -> Answer:
    payload = ArchitectPayload.model_validate(request.payload)
    cases, dropped = plan(payload.task, payload.limits.max_cases)
    if not cases:
        raise AdapterFailure(
            "nothing-to-plan",
            "the specification states no signature, example or edge case, and the source "
            "defines no public function",
        )
    notes = [RULE_BASED_NOTE, f"planned {len(cases)} case(s); lessons are not read"]
    if dropped:
        notes.append(f"left out {dropped} case(s) over limits.maxCases")
    response = {"cases": [case.model_dump(by_alias=True) for case in cases]}
    return Answer(response=response, notes=notes)


# --- reviewer ------------------------------------------------------------------------------


def module_name(path: str) -> str | None:
    """``src/a/b.py`` -> ``a.b`` (``src/a/__init__.py`` -> ``a``); ``None`` for other paths."""
    match = _SOURCE_PATH.fullmatch(path)
    if match is None:
        return None
    dotted = match["dotted"].replace("/", ".")
    return dotted.removesuffix(".__init__")


def _targets(node: ast.AST) -> Iterator[str]:
    """The names an assignment target binds (tuples, lists and starred unpacked)."""
    if isinstance(node, ast.Name):
        yield node.id
    elif isinstance(node, ast.Tuple | ast.List):
        for element in node.elts:
            yield from _targets(element)
    elif isinstance(node, ast.Starred):
        yield from _targets(node.value)


def _top_level(statements: Iterable[ast.stmt]) -> Iterator[ast.stmt]:
    """Module-level statements, descending into if/try/with/for/while but not defs."""
    for node in statements:
        yield node
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(node, field, None)
            if isinstance(inner, list) and not isinstance(
                node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
            ):
                yield from _top_level(inner)
        for handler in getattr(node, "handlers", []):
            yield from _top_level(handler.body)


def defined_names(source: str) -> frozenset[str] | None:
    """The names a module defines at top level; ``None`` when that cannot be known (it does
    not parse, has a module ``__getattr__`` or a star import)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return None
    names: set[str] = set(_MODULE_DUNDERS)
    for node in _top_level(tree.body):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if node.name == "__getattr__":
                return None
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                names.update(_targets(target))
        elif isinstance(node, ast.AnnAssign | ast.AugAssign | ast.For | ast.AsyncFor):
            names.update(_targets(node.target))
        elif isinstance(node, ast.With | ast.AsyncWith):
            for item in node.items:
                if item.optional_vars is not None:
                    names.update(_targets(item.optional_vars))
        elif isinstance(node, ast.Import):
            names.update(alias.asname or alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name == "*":
                    return None
                names.add(alias.asname or alias.name)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.NamedExpr):
            names.update(_targets(node.value.target))
    return frozenset(names)


def _dotted(node: ast.expr) -> list[str] | None:
    """``a.b.c`` as ``["a", "b", "c"]``; ``None`` when the chain does not start at a name."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


class _FileReview:
    """The rules applied to one parsed test file."""

    def __init__(
        self, path: str, tree: ast.Module, modules: dict[str, frozenset[str] | None]
    ) -> None:
        self.path = path
        self.tree = tree
        self.modules = modules
        self.problems: dict[str, None] = {}
        # Local name -> the dotted name it stands for (imports and sys.modules look-ups).
        self.aliases: dict[str, str] = {}
        self.bound: set[str] = set()
        self.temp: set[str] = set()
        self.paths: set[str] = set()
        self.star_modules: list[str] = []

    def problem(self, text: str) -> None:
        self.problems[f"{self.path}: {text}"] = None

    # names and imports

    def _module_of(self, dotted: str) -> tuple[str, str | None] | None:
        """For ``src.<m>[.<rest>]`` naming a module under test: ``(m, first rest part)``."""
        if not dotted.startswith("src."):
            return None
        for name in sorted(self.modules, key=len, reverse=True):
            prefix = f"src.{name}"
            if dotted == prefix:
                return name, None
            if dotted.startswith(prefix + "."):
                return name, dotted[len(prefix) + 1 :].split(".")[0]
        return None

    def _check_import(self, dotted: str, star: bool = False) -> None:
        top = dotted.split(".")[0]
        if top == "pytest":
            return
        if top == "src":
            under_test = self._module_of(dotted)
            if under_test is None:
                self.problem(
                    f"imports {dotted}, which is not a module under test "
                    f"({', '.join('src.' + m for m in sorted(self.modules)) or 'none'})"
                )
            elif under_test[1] is not None:
                self._check_defined(under_test[0], under_test[1])
            return
        if top not in sys.stdlib_module_names:
            self.problem(
                f"imports {dotted}, which is neither the module under test, pytest nor the "
                "standard library"
            )
            return
        reason = _FORBIDDEN_MODULES.get(top)
        if reason is not None:
            self.problem(f"imports {dotted}: tests must not use {reason}")
        elif star:
            self.problem(f"star-imports {dotted}: the names it calls cannot be checked")

    def _check_defined(self, module: str, name: str) -> None:
        names = self.modules[module]
        if names is not None and name not in names:
            self.problem(f"uses {name}, which src.{module} does not define")

    def collect(self) -> None:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    self._check_import(alias.name)
                    if alias.asname:
                        self.aliases[alias.asname] = alias.name
                        self.bound.add(alias.asname)
                    else:
                        top = alias.name.split(".")[0]
                        self.aliases[top] = top
                        self.bound.add(top)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    self.problem("uses a relative import; import the module under test as src.<m>")
                    continue
                base = node.module or ""
                for alias in node.names:
                    if alias.name == "*":
                        self._check_import(base, star=True)
                        if self._module_of(base) is not None:
                            self.star_modules.append(base)
                        continue
                    full = f"{base}.{alias.name}"
                    # ``from src import m`` imports a module; ``from os import x`` a name of os.
                    self._check_import(full if base.split(".")[0] == "src" else base)
                    self._check_callable(full)
                    self.aliases[alias.asname or alias.name] = full
                    self.bound.add(alias.asname or alias.name)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                self.bound.add(node.name)
                if not isinstance(node, ast.ClassDef):
                    for arg in [
                        *node.args.posonlyargs,
                        *node.args.args,
                        *node.args.kwonlyargs,
                        *([node.args.vararg] if node.args.vararg else []),
                        *([node.args.kwarg] if node.args.kwarg else []),
                    ]:
                        self.bound.add(arg.arg)
                        if arg.arg in _TEMP_FIXTURES:
                            self.temp.add(arg.arg)
            elif isinstance(node, ast.Lambda):
                self.bound.update(arg.arg for arg in node.args.args)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
                self.bound.add(node.id)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                self.bound.add(node.name)
            elif isinstance(node, ast.Global | ast.Nonlocal):
                self.bound.update(node.names)
            elif isinstance(node, ast.MatchAs | ast.MatchStar) and node.name:
                self.bound.add(node.name)
            elif isinstance(node, ast.MatchMapping) and node.rest:
                self.bound.add(node.rest)
        self._sys_module_aliases()
        self._flow_paths()

    def _sys_module_aliases(self) -> None:
        """``x = sys.modules["src.m"]`` (as Pynguin writes) makes ``x`` stand for ``src.m``."""
        for node in ast.walk(self.tree):
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Subscript)
                and self.resolve(node.value.value) == "sys.modules"
            ):
                key = node.value.slice
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    self._check_import(key.value)
                    self.aliases[node.targets[0].id] = key.value
                else:
                    self.problem("looks a module up in sys.modules by a computed name")

    def resolve(self, node: ast.expr) -> str | None:
        """The dotted name an expression stands for, through the file's imports."""
        parts = _dotted(node)
        if parts is None:
            return None
        head = parts[0]
        if head in self.aliases:
            return ".".join([self.aliases[head], *parts[1:]])
        if head not in self.bound and head in _BUILTINS:
            return ".".join(["builtins", *parts])
        return None

    # temporary directories and paths

    def _is_temp(self, node: ast.expr | None) -> bool:
        if node is None:
            return False
        if isinstance(node, ast.Name):
            return node.id in self.temp
        if isinstance(node, ast.Call):
            name = self.resolve(node.func)
            if name is not None and name.startswith("tempfile."):
                return True
            if name in ("os.path.join", "os.fspath", "builtins.str", "pathlib.Path"):
                return bool(node.args) and self._is_temp(node.args[0])
            return isinstance(node.func, ast.Attribute) and self._is_temp(node.func.value)
        if isinstance(node, ast.Attribute | ast.Subscript):
            return self._is_temp(node.value)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div | ast.Add):
            return self._is_temp(node.left)
        if isinstance(node, ast.JoinedStr) and node.values:
            first = node.values[0]
            return isinstance(first, ast.FormattedValue) and self._is_temp(first.value)
        return False

    def _is_path(self, node: ast.expr) -> bool:
        """A pathlib path built here that does not lie under a temporary directory."""
        if self._is_temp(node):
            return False
        if isinstance(node, ast.Name):
            return node.id in self.paths
        if isinstance(node, ast.Call):
            name = self.resolve(node.func)
            if name in _PATH_CONSTRUCTORS:
                return True
            return (
                isinstance(node.func, ast.Attribute)
                and node.func.attr in _PATH_DERIVING
                and self._is_path(node.func.value)
            )
        if isinstance(node, ast.Attribute) and node.attr in ("parent", "parents"):
            return self._is_path(node.value)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            return self._is_path(node.left)
        return False

    def _flow_paths(self) -> None:
        """Follow assignments until no more names are known to hold temporary or other paths."""
        assignments: list[tuple[list[str], ast.expr]] = []
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Assign):
                names = [name for target in node.targets for name in _targets(target)]
                assignments.append((names, node.value))
            elif isinstance(node, ast.NamedExpr | ast.AnnAssign) and node.value is not None:
                assignments.append((list(_targets(node.target)), node.value))
            elif isinstance(node, ast.With | ast.AsyncWith):
                for item in node.items:
                    if item.optional_vars is not None:
                        assignments.append((list(_targets(item.optional_vars)), item.context_expr))
        changed = True
        while changed:
            changed = False
            for names, value in assignments:
                if self._is_temp(value):
                    fresh = set(names) - self.temp
                    self.temp |= fresh
                    changed |= bool(fresh)
                elif self._is_path(value):
                    fresh = set(names) - self.paths
                    self.paths |= fresh
                    changed |= bool(fresh)

    def _check_callable(self, name: str) -> None:
        reason = _FORBIDDEN_CALLABLES.get(name)
        if reason is not None:
            self.problem(f"uses {name}: tests must not use {reason}")

    # the rules over every node

    def check_nodes(self) -> None:
        seen_attribute_chains: set[int] = set()
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Attribute) and id(node) not in seen_attribute_chains:
                inner = node.value
                while isinstance(inner, ast.Attribute):
                    seen_attribute_chains.add(id(inner))
                    inner = inner.value
                name = self.resolve(node)
                if name is not None:
                    self._check_reference(name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                name = self.resolve(node)
                if name is not None:
                    self._check_reference(name)
            if isinstance(node, ast.Call):
                self._check_call(node)

    def _check_reference(self, name: str) -> None:
        under_test = self._module_of(name)
        if under_test is not None and under_test[1] is not None:
            self._check_defined(*under_test)  # type: ignore[arg-type]
        self._check_callable(name)

    def _check_call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id not in self.bound and func.id not in _BUILTINS:
            if self.star_modules:
                for base in self.star_modules:
                    module = self._module_of(base)
                    if module is not None:
                        self._check_defined(module[0], func.id)
            else:
                self.problem(
                    f"calls {func.id}, which neither the module under test nor the test defines"
                )
        name = self.resolve(func)
        if name in ("builtins.getattr", "builtins.setattr", "builtins.delattr") and node.args:
            target = self.resolve(node.args[0])
            if target is not None:
                attribute = node.args[1] if len(node.args) > 1 else None
                if isinstance(attribute, ast.Constant) and isinstance(attribute.value, str):
                    self._check_reference(f"{target}.{attribute.value}")
                else:
                    self.problem(f"looks an attribute of {target} up by a computed name")
        if name in _PATH_CALLABLES:
            arguments = [*node.args, *(k.value for k in node.keywords if k.arg in _PATH_KEYS)]
            if name == "sqlite3.connect" and _is_constant(arguments[:1], ":memory:"):
                return
            if name == "builtins.open" and arguments and _is_descriptor(arguments[0]):
                return
            if not arguments or not self._is_temp(arguments[0]):
                self.problem(f"calls {name} on a path outside a temporary directory")
            elif name in _TWO_PATHS and len(arguments) > 1 and not self._is_temp(arguments[1]):
                self.problem(f"calls {name} with a target outside a temporary directory")
        elif name is not None and name.startswith("shutil."):
            arguments = [*node.args, *(k.value for k in node.keywords if k.arg in _PATH_KEYS)]
            if not arguments or not all(self._is_temp(arg) for arg in arguments[:2]):
                self.problem(f"calls {name} on a path outside a temporary directory")
        if isinstance(func, ast.Attribute) and func.attr in _PATH_IO and self._is_path(func.value):
            self.problem(f"calls .{func.attr}() on a path outside a temporary directory")

    # tests and assertions

    def tests(self) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
        found: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
        for node in self.tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
                "test"
            ):
                found.append(node)
            elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
                found += [
                    item
                    for item in node.body
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
                    and item.name.startswith("test")
                ]
        return found

    def asserts(self, test: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        for node in ast.walk(test):
            if isinstance(node, ast.Assert) and not _vacuous(node.test):
                return True
            if isinstance(node, ast.Call) and self.resolve(node.func) == "pytest.raises":
                return True
        return False


_PATH_KEYS: Final = frozenset({"file", "path", "src", "dst", "name", "filename", "top", "database"})
_TWO_PATHS: Final = frozenset({"os.rename", "os.renames", "os.replace", "os.link", "os.symlink"})


def _is_constant(nodes: Sequence[ast.expr], value: object) -> bool:
    return bool(nodes) and isinstance(nodes[0], ast.Constant) and nodes[0].value == value


def _is_descriptor(node: ast.expr) -> bool:
    """A literal file descriptor number (``open(1)``), which names no path."""
    return isinstance(node, ast.Constant) and type(node.value) is int


def _vacuous(test: ast.expr) -> bool:
    """An assert that cannot fail: a truthy constant, or a non-empty tuple (``assert (x, m)``)."""
    if isinstance(test, ast.Constant):
        return bool(test.value)
    return isinstance(test, ast.Tuple) and bool(test.elts)


def review_file(entry: FileEntry, modules: dict[str, frozenset[str] | None]) -> list[str]:
    """Every rule one test file breaks, as ``path: problem`` lines (empty when none)."""
    if not _TEST_PATH.fullmatch(entry.path):
        return [f"{entry.path}: not a canonical pytest test path (tests/test_<name>.py)"]
    try:
        tree = ast.parse(entry.content)
    except SyntaxError as exc:
        return [f"{entry.path}: does not parse as Python (line {exc.lineno}: {exc.msg})"]
    except (ValueError, RecursionError, MemoryError) as exc:
        return [f"{entry.path}: does not parse as Python ({type(exc).__name__})"]
    check = _FileReview(entry.path, tree, modules)
    try:
        check.collect()
        check.check_nodes()
    except RecursionError:
        return [f"{entry.path}: nested too deeply to check"]
    tests = check.tests()
    if not tests:
        check.problem("defines no test")
    for test in tests:
        if not check.asserts(test):
            check.problem(f"{test.name} asserts nothing (no assert statement or pytest.raises)")
    return list(check.problems)


def review(task: Task, tests: Sequence[FileEntry]) -> tuple[bool, list[str]]:
    """The verdict on ``tests`` and its reasons: every problem found, or what was checked."""
    if task.runner != "pytest":
        raise AdapterFailure(
            "unsupported-runner", "the static reviewer's rules are written for pytest tests"
        )
    if not tests:
        return False, ["no test files were given"]
    modules: dict[str, frozenset[str] | None] = {}
    for entry in task.source:
        name = module_name(entry.path)
        if name is not None:
            modules[name] = defined_names(entry.content)
    problems = [problem for entry in tests for problem in review_file(entry, modules)]
    if problems:
        return False, problems
    return True, [
        f"{RULES_VERSION}: {len(tests)} file(s) pass every rule: " + "; ".join(RULES),
    ]


def _reviewer(request: Request) -> Answer:
    payload = ReviewerPayload.model_validate(request.payload)
    approved, reasons = review(payload.task, payload.tests)
    return Answer(
        response={"verdict": "approve" if approved else "reject", "reasons": reasons},
        notes=[RULE_BASED_NOTE, f"{'approved' if approved else 'rejected'} by {RULES_VERSION}"],
    )


def handle(request: Request) -> Answer:
    """Architect plans from the specification, reviewer applies the rules; others refused."""
    if request.role == "architect":
        return _architect(request)
    if request.role == "reviewer":
        return _reviewer(request)
    raise AdapterFailure(
        "unsupported-role",
        f"the static worker cannot act as {request.role}; it plans and reviews, it writes no tests",
    )


def _parser() -> argparse.ArgumentParser:
    return argparse.ArgumentParser(
        prog="static-worker",
        description="A rule-based lorelab.worker/1 architect and reviewer (no model).",
        allow_abbrev=False,
    )


def main() -> None:
    """Entry point: ``python -m lorelab.workers.adapters.static``."""
    run_adapter(_parser(), handle, sys.argv[1:])


if __name__ == "__main__":
    main()
