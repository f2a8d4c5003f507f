"""The static reviewer's rules (``lorelab.static-rules/1``), their vocabulary (forbidden modules
and callables, file-system calls and path builders) and the module facts they read: which names
a module under test defines. docs/workers.md lists the rules."""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Final

RULES_VERSION: Final = "lorelab.static-rules/1"
RULES: Final[tuple[str, ...]] = (
    "every file is a canonical pytest test path and parses as Python",
    "every file defines a test, and every test asserts (a non-constant assert or pytest.raises)",
    "imports only the module under test, pytest and the standard library",
    "uses only names the module under test defines",
    "no time, randomness, network, processes or dynamic code",
    "files only under a temporary directory (tmp_path, tmpdir, tempfile)",
)

TEST_PATH: Final = re.compile(r"tests/test_[A-Za-z0-9_]+\.py")
SOURCE_PATH: Final = re.compile(r"src/(?P<dotted>[A-Za-z_]\w*(?:/[A-Za-z_]\w*)*)\.py")
# Module-level attributes every module has, whatever its source defines.
_MODULE_DUNDERS: Final = frozenset(
    {"__name__", "__doc__", "__file__", "__dict__", "__spec__", "__loader__", "__package__"}
)
TEMP_FIXTURES: Final = frozenset({"tmp_path", "tmpdir", "tmp_path_factory", "tmpdir_factory"})
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
FORBIDDEN_MODULES: Final[dict[str, str]] = {
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
FORBIDDEN_CALLABLES: Final[dict[str, str]] = {
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
PATH_CALLABLES: Final = frozenset(
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
PATH_CONSTRUCTORS: Final = frozenset(
    {"pathlib.Path", "pathlib.PosixPath", "pathlib.WindowsPath", "pathlib.Path.home"}
    | {"pathlib.Path.cwd", "os.getcwd"}
)
PATH_DERIVING: Final = frozenset(
    {"joinpath", "resolve", "absolute", "with_name", "with_suffix", "with_stem", "expanduser"}
)
# pathlib methods that touch the file system.
PATH_IO: Final = frozenset(
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
BUILTINS: Final = frozenset(dir(builtins))


def module_name(path: str) -> str | None:
    """``src/a/b.py`` -> ``a.b`` (``src/a/__init__.py`` -> ``a``); ``None`` for other paths."""
    match = SOURCE_PATH.fullmatch(path)
    if match is None:
        return None
    dotted = match["dotted"].replace("/", ".")
    return dotted.removesuffix(".__init__")


def bound_targets(node: ast.AST) -> Iterator[str]:
    """The names an assignment target binds (tuples, lists and starred unpacked)."""
    if isinstance(node, ast.Name):
        yield node.id
    elif isinstance(node, ast.Tuple | ast.List):
        for element in node.elts:
            yield from bound_targets(element)
    elif isinstance(node, ast.Starred):
        yield from bound_targets(node.value)


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
                names.update(bound_targets(target))
        elif isinstance(node, ast.AnnAssign | ast.AugAssign | ast.For | ast.AsyncFor):
            names.update(bound_targets(node.target))
        elif isinstance(node, ast.With | ast.AsyncWith):
            for item in node.items:
                if item.optional_vars is not None:
                    names.update(bound_targets(item.optional_vars))
        elif isinstance(node, ast.Import):
            names.update(alias.asname or alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name == "*":
                    return None
                names.add(alias.asname or alias.name)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.NamedExpr):
            names.update(bound_targets(node.value.target))
    return frozenset(names)


def dotted_parts(node: ast.expr) -> list[str] | None:
    """``a.b.c`` as ``["a", "b", "c"]``; ``None`` when the chain does not start at a name."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


PATH_KEYS: Final = frozenset({"file", "path", "src", "dst", "name", "filename", "top", "database"})
TWO_PATHS: Final = frozenset({"os.rename", "os.renames", "os.replace", "os.link", "os.symlink"})


def is_constant(nodes: Sequence[ast.expr], value: object) -> bool:
    return bool(nodes) and isinstance(nodes[0], ast.Constant) and nodes[0].value == value


def is_descriptor(node: ast.expr) -> bool:
    """A literal file descriptor number (``open(1)``), which names no path."""
    return isinstance(node, ast.Constant) and type(node.value) is int


def is_vacuous(test: ast.expr) -> bool:
    """An assert that cannot fail: a truthy constant, or a non-empty tuple (``assert (x, m)``)."""
    if isinstance(test, ast.Constant):
        return bool(test.value)
    return isinstance(test, ast.Tuple) and bool(test.elts)
