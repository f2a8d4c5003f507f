"""The static reviewer: applies the rules of :mod:`lorelab.workers.adapters._static_rules` to
each generated pytest file, from its syntax alone, and names every rule a file breaks."""

from __future__ import annotations

import ast
import sys
from collections.abc import Sequence

from lorelab.workers.adapters._agent import AdapterFailure
from lorelab.workers.adapters._static_rules import (
    BUILTINS,
    FORBIDDEN_CALLABLES,
    FORBIDDEN_MODULES,
    PATH_CALLABLES,
    PATH_CONSTRUCTORS,
    PATH_DERIVING,
    PATH_IO,
    PATH_KEYS,
    RULES,
    RULES_VERSION,
    TEMP_FIXTURES,
    TEST_PATH,
    TWO_PATHS,
    bound_targets,
    defined_names,
    dotted_parts,
    is_constant,
    is_descriptor,
    is_vacuous,
    module_name,
)
from lorelab.workers.roles import Task
from lorelab.workspace import FileEntry


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
        reason = FORBIDDEN_MODULES.get(top)
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
                        if arg.arg in TEMP_FIXTURES:
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
        parts = dotted_parts(node)
        if parts is None:
            return None
        head = parts[0]
        if head in self.aliases:
            return ".".join([self.aliases[head], *parts[1:]])
        if head not in self.bound and head in BUILTINS:
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
            if name in PATH_CONSTRUCTORS:
                return True
            return (
                isinstance(node.func, ast.Attribute)
                and node.func.attr in PATH_DERIVING
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
                names = [name for target in node.targets for name in bound_targets(target)]
                assignments.append((names, node.value))
            elif isinstance(node, ast.NamedExpr | ast.AnnAssign) and node.value is not None:
                assignments.append((list(bound_targets(node.target)), node.value))
            elif isinstance(node, ast.With | ast.AsyncWith):
                for item in node.items:
                    if item.optional_vars is not None:
                        assignments.append(
                            (list(bound_targets(item.optional_vars)), item.context_expr)
                        )
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
        reason = FORBIDDEN_CALLABLES.get(name)
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
        if isinstance(func, ast.Name) and func.id not in self.bound and func.id not in BUILTINS:
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
        if name in PATH_CALLABLES:
            arguments = [*node.args, *(k.value for k in node.keywords if k.arg in PATH_KEYS)]
            if name == "sqlite3.connect" and is_constant(arguments[:1], ":memory:"):
                return
            if name == "builtins.open" and arguments and is_descriptor(arguments[0]):
                return
            if not arguments or not self._is_temp(arguments[0]):
                self.problem(f"calls {name} on a path outside a temporary directory")
            elif name in TWO_PATHS and len(arguments) > 1 and not self._is_temp(arguments[1]):
                self.problem(f"calls {name} with a target outside a temporary directory")
        elif name is not None and name.startswith("shutil."):
            arguments = [*node.args, *(k.value for k in node.keywords if k.arg in PATH_KEYS)]
            if not arguments or not all(self._is_temp(arg) for arg in arguments[:2]):
                self.problem(f"calls {name} on a path outside a temporary directory")
        if isinstance(func, ast.Attribute) and func.attr in PATH_IO and self._is_path(func.value):
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
            if isinstance(node, ast.Assert) and not is_vacuous(node.test):
                return True
            if isinstance(node, ast.Call) and self.resolve(node.func) == "pytest.raises":
                return True
        return False


def review_file(entry: FileEntry, modules: dict[str, frozenset[str] | None]) -> list[str]:
    """Every rule one test file breaks, as ``path: problem`` lines (empty when none)."""
    if not TEST_PATH.fullmatch(entry.path):
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
