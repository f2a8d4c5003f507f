"""The static worker's reviewer: every review rule with adversarial inputs."""

import textwrap

import pytest

from lorelab.workers.adapters._agent import AdapterFailure
from lorelab.workers.adapters._static_review import review
from lorelab.workers.adapters._static_rules import RULES_VERSION, defined_names, module_name
from lorelab.workspace import FileEntry
from tests.support.static_worker import CLAMP, static_task


def _review(test: str, path: str = "tests/test_clamp.py", source: str = CLAMP):
    return review(
        static_task(source), [FileEntry(path=path, content=textwrap.dedent(test).lstrip())]
    )


def _problems(test: str, **kwargs) -> str:
    approved, reasons = _review(test, **kwargs)
    assert not approved, reasons
    return "\n".join(reasons)


GOOD = """
    import math
    import sys

    import pytest

    import src.clamp
    import src.clamp as module_0
    from src.clamp import Box, clamp

    clamp_ = sys.modules["src.clamp"]


    def test_upper():
        assert clamp(5, 0, 3) == 3
        assert module_0.clamp(1, 0, 3) == 1
        assert src.clamp.clamp(2, 0, 3) == 2
        assert clamp_.LIMIT == 10 and clamp_.FLAG
        assert math.isclose(Box().get(), 1)


    def test_invalid():
        with pytest.raises(ValueError):
            clamp(1, 3, 0)


    class TestClamp:
        def test_lower(self):
            values = [clamp(v, 0, 3) for v in range(-2, 0)]
            assert values == [0, 0]


    def test_files_in_tmp_path(tmp_path):
        target = tmp_path / "data.txt"
        target.write_text("x")
        with open(target) as handle:
            assert handle.read() == "x"
        assert (tmp_path / "data.txt").exists()
    """


def test_clean_pytest_tests_are_approved_with_the_rules_named():
    approved, reasons = _review(GOOD)
    assert approved, reasons
    [reason] = reasons
    assert reason.startswith(f"{RULES_VERSION}: 1 file(s) pass every rule")
    assert "standard library" in reason


# --- parsing and test shape ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("test", "expected"),
    [
        ("def test_a(:\n    pass\n", "does not parse as Python (line 1"),
        ("def test_a():\n    assert 1 ==\n", "does not parse as Python"),
        ("x = '\x00'\n", "does not parse"),
        ("def helper():\n    assert 1 == 1\n", "defines no test"),
        ("", "defines no test"),
    ],
)
def test_files_that_do_not_parse_or_define_no_test_are_rejected(test, expected):
    assert expected in _problems(test)


def test_a_deeply_nested_file_is_rejected_not_crashed_on():
    nested = "def test_a():\n    assert " + "(" * 5000 + "1" + ")" * 5000 + "\n"
    assert "tests/test_clamp.py:" in _problems(nested)


@pytest.mark.parametrize("path", ["tests/clamp_test.py", "src/test_clamp.py", "test/a.test.js"])
def test_a_file_outside_the_canonical_test_paths_is_rejected(path):
    assert "not a canonical pytest test path" in _problems(
        "def test_a():\n    assert 1\n", path=path
    )


def test_no_test_files_is_a_rejection():
    approved, reasons = review(static_task(), [])
    assert not approved
    assert reasons == ["no test files were given"]


# --- assertions ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        "    clamp(1, 0, 3)\n",
        "    assert True\n",
        "    assert 1\n",
        "    assert 'non-empty'\n",
        "    assert (clamp(1, 0, 3) == 2, 'a tuple is always true')\n",
        "    pass\n",
        "    raises = clamp\n    raises(1, 0, 3)\n",
    ],
)
def test_a_test_without_a_real_assertion_is_rejected_by_name(body):
    test = "from src.clamp import clamp\n\n\ndef test_quiet():\n" + body
    assert "test_quiet asserts nothing" in _problems(test)


def test_one_test_without_assertion_rejects_the_file_even_beside_good_tests():
    test = (
        "from src.clamp import clamp\n\n\ndef test_good():\n    assert clamp(1, 0, 3) == 1\n\n\n"
        "class TestMore:\n    def test_silent(self):\n        clamp(1, 0, 3)\n"
    )
    problems = _problems(test)
    assert "test_silent asserts nothing" in problems
    assert "test_good" not in problems


@pytest.mark.parametrize(
    "body",
    [
        "    with pytest.raises(ValueError):\n        clamp(1, 3, 0)\n",
        "    pytest.raises(ValueError, clamp, 1, 3, 0)\n",
        "    with raises(ValueError):\n        clamp(1, 3, 0)\n",
        "    assert not clamp(0, 0, 0)\n",
        "    assert False, 'an assert that fails is an assertion'\n",
    ],
)
def test_pytest_raises_in_any_spelling_and_real_asserts_count_as_assertions(body):
    test = (
        "import pytest\nfrom pytest import raises\nfrom src.clamp import clamp\n\n\n"
        "def test_it():\n" + body
    )
    approved, reasons = _review(test)
    assert approved, reasons


# --- imports -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("import numpy", "imports numpy, which is neither the module under test"),
        ("import hypothesis.strategies as st", "imports hypothesis.strategies"),
        ("from lorelab.io import canonical_json", "imports lorelab.io"),
        ("import _pytest.python", "imports _pytest.python"),
        ("import src.other", "imports src.other, which is not a module under test"),
        ("from src import other", "imports src.other, which is not a module under test"),
        ("import src", "imports src, which is not a module under test"),
        ("from . import clamp", "relative import"),
        ("from .clamp import clamp", "relative import"),
        ("import tests.helpers", "imports tests.helpers"),
        ("import conftest", "imports conftest"),
        ("from math import *", "star-imports math"),
    ],
)
def test_imports_other_than_the_module_pytest_and_the_stdlib_are_rejected(line, expected):
    test = f"{line}\n\n\ndef test_a():\n    assert 1 == 1\n"
    assert expected in _problems(test)


def test_imports_inside_a_test_function_are_checked_too():
    test = "def test_a():\n    import requests\n    assert requests\n"
    assert "imports requests" in _problems(test)


def test_a_sys_modules_lookup_counts_as_an_import():
    test = 'import sys\nm = sys.modules["src.secret"]\n\n\ndef test_a():\n    assert m\n'
    assert "imports src.secret, which is not a module under test" in _problems(test)
    computed = 'import sys\nm = sys.modules["src." + "x"]\n\n\ndef test_a():\n    assert m\n'
    assert "sys.modules by a computed name" in _problems(computed)


def test_a_star_import_of_the_module_under_test_is_allowed_and_checked():
    test = "from src.clamp import *\n\n\ndef test_a():\n    assert clamp(1, 0, 3) == 1\n"
    approved, reasons = _review(test)
    assert approved, reasons
    missing = "from src.clamp import *\n\n\ndef test_a():\n    assert clamp_to(1) == 1\n"
    assert "uses clamp_to, which src.clamp does not define" in _problems(missing)


# --- names the module does not define ------------------------------------------------------


@pytest.mark.parametrize(
    ("test", "expected"),
    [
        (
            "from src.clamp import clamp_to\n\n\ndef test_a():\n    assert clamp_to(1) == 1\n",
            "uses clamp_to, which src.clamp does not define",
        ),
        (
            "import src.clamp as m\n\n\ndef test_a():\n    assert m.dedupe([1]) == [1]\n",
            "uses dedupe, which src.clamp does not define",
        ),
        (
            "import src.clamp\n\n\ndef test_a():\n    assert src.clamp.clamp2(1) == 1\n",
            "uses clamp2, which src.clamp does not define",
        ),
        (
            'import sys\nimport src.clamp\nm_ = sys.modules["src.clamp"]\n\n\n'
            "def test_a():\n    assert m_.clmap(1, 0, 3) == 1\n",
            "uses clmap, which src.clamp does not define",
        ),
        (
            "def test_a():\n    assert clamp(1, 0, 3) == 1\n",
            "calls clamp, which neither the module under test nor the test defines",
        ),
        (
            'import src.clamp as m\n\n\ndef test_a():\n    assert getattr(m, "nope")() == 1\n',
            "uses nope, which src.clamp does not define",
        ),
        (
            'import src.clamp as m\n\n\ndef test_a():\n    name = "cl" + "amp"\n'
            "    assert getattr(m, name)(1, 0, 3) == 1\n",
            "looks an attribute of src.clamp up by a computed name",
        ),
    ],
)
def test_names_the_module_under_test_does_not_define_are_rejected(test, expected):
    assert expected in _problems(test)


def test_names_the_module_defines_in_every_way_are_accepted():
    test = (
        "import src.clamp as m\n\n\ndef test_a():\n"
        "    assert m.LIMIT and m.FLAG and m.math.pi and m.Box and m.__name__\n"
        "    assert getattr(m, 'clamp')(1, 0, 3) == 1\n"
    )
    approved, reasons = _review(test)
    assert approved, reasons


def test_a_module_with_a_module_getattr_defines_every_name():
    source = "def __getattr__(name):\n    return name\n"
    assert defined_names(source) is None
    approved, reasons = _review(
        "import src.clamp as m\n\n\ndef test_a():\n    assert m.anything\n", source=source
    )
    assert approved, reasons


def test_a_module_that_does_not_parse_leaves_its_names_unknown_not_empty():
    assert defined_names("def broken(:\n") is None


def test_defined_names_see_nested_top_level_blocks_but_not_function_bodies():
    names = defined_names(
        "try:\n    import json as J\nexcept ImportError:\n    J = None\n"
        "for I in range(1):\n    pass\nwith open(__file__) as FH:\n    pass\n"
        "A, (B, *C) = 1, (2, 3)\nD: int = 4\n"
        "def f():\n    INNER = 1\n"
    )
    assert names is not None
    assert {"J", "I", "FH", "A", "B", "C", "D", "f"} <= names
    assert "INNER" not in names


def test_module_names_follow_the_src_layout():
    assert module_name("src/clamp.py") == "clamp"
    assert module_name("src/pkg/mod.py") == "pkg.mod"
    assert module_name("src/pkg/__init__.py") == "pkg"
    assert module_name("lib/clamp.py") is None


# --- time, randomness, network, processes, dynamic code ------------------------------------


@pytest.mark.parametrize(
    ("line", "use", "expected"),
    [
        ("import time", "time.sleep(0)", "imports time: tests must not use time"),
        ("from time import monotonic", "monotonic()", "imports time: tests must not use time"),
        (
            "import datetime",
            "datetime.datetime.now()",
            "uses datetime.datetime.now: tests must not use time",
        ),
        (
            "from datetime import date as d",
            "d.today()",
            "uses datetime.date.today: tests must not use time",
        ),
        ("import random", "random.random()", "imports random: tests must not use randomness"),
        ("import secrets", "secrets.token_hex()", "imports secrets"),
        ("import os", "os.urandom(4)", "uses os.urandom: tests must not use randomness"),
        ("from uuid import uuid4", "uuid4()", "uses uuid.uuid4: tests must not use randomness"),
        ("import socket", "socket.socket()", "imports socket: tests must not use network"),
        ("import urllib.request", "urllib.request.urlopen('x')", "tests must not use network"),
        ("from http import client", "client", "imports http: tests must not use network"),
        ("import asyncio", "asyncio.open_connection", "tests must not use network"),
        ("import subprocess", "subprocess.run(['ls'])", "tests must not use processes"),
        ("import os", "os.system('ls')", "uses os.system: tests must not use processes"),
        ("from os import popen", "popen('ls')", "uses os.popen: tests must not use processes"),
        ("import os", "exec('x = 1')", "uses builtins.exec: tests must not use dynamic code"),
        ("import os", "eval('1')", "uses builtins.eval"),
        ("import os", "__import__('socket')", "uses builtins.__import__"),
        ("import importlib", "importlib.import_module('socket')", "importlib.import_module"),
        ("import builtins", "getattr(builtins, 'ex' + 'ec')", "computed name"),
    ],
)
def test_time_randomness_network_processes_and_dynamic_code_are_rejected(line, use, expected):
    test = f"{line}\n\n\ndef test_a():\n    value = {use}\n    assert value is not None\n"
    assert expected in _problems(test)


def test_a_local_name_shadowing_a_builtin_is_not_the_builtin():
    test = (
        "from src.clamp import clamp\n\n\ndef test_a():\n"
        "    def eval(x):\n        return clamp(x, 0, 3)\n    assert eval(5) == 3\n"
    )
    approved, reasons = _review(test)
    assert approved, reasons


def test_an_allowed_datetime_use_is_not_time():
    test = "import datetime\n\n\ndef test_a():\n    assert datetime.date(2020, 1, 1).year == 2020\n"
    approved, reasons = _review(test)
    assert approved, reasons


# --- files ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("use", "expected"),
    [
        ("open('data.txt')", "calls builtins.open on a path outside a temporary directory"),
        ("open('/etc/passwd').read()", "calls builtins.open on a path outside"),
        ("open(file='out.txt', mode='w')", "calls builtins.open on a path outside"),
        ("os.remove('x')", "calls os.remove on a path outside"),
        ("os.listdir()", "calls os.listdir on a path outside"),
        ("os.rename(tmp_path / 'a', '/tmp/b')", "calls os.rename with a target outside"),
        ("shutil.rmtree('build')", "calls shutil.rmtree on a path outside"),
        ("shutil.copy(tmp_path / 'a', 'b')", "calls shutil.copy on a path outside"),
        ("pathlib.Path('x.txt').write_text('x')", "calls .write_text() on a path outside"),
        ("Path.home().joinpath('.ssh').iterdir()", "calls .iterdir() on a path outside"),
        ("(Path.cwd() / 'out').mkdir()", "calls .mkdir() on a path outside"),
        ("Path('/tmp') / 'x'", None),
        ("glob.glob('*.py')", "calls glob.glob on a path outside"),
        ("sqlite3.connect('db.sqlite')", "calls sqlite3.connect on a path outside"),
        ("io.open(os.getcwd() + '/x')", "calls io.open on a path outside"),
    ],
)
def test_files_outside_a_temporary_directory_are_rejected(use, expected):
    test = (
        "import glob\nimport io\nimport os\nimport pathlib\nimport shutil\nimport sqlite3\n"
        f"from pathlib import Path\n\n\ndef test_a(tmp_path):\n    value = {use}\n"
        "    assert value is not None\n"
    )
    approved, reasons = _review(test)
    if expected is None:  # building a path touches nothing
        assert approved, reasons
    else:
        assert not approved
        assert expected in "\n".join(reasons)


def test_a_path_name_assigned_outside_tmp_is_followed_to_its_use():
    test = (
        "from pathlib import Path\n\n\ndef test_a():\n    here = Path('.')\n"
        "    target = here / 'out.txt'\n    target.write_text('x')\n    assert target\n"
    )
    assert "calls .write_text() on a path outside" in _problems(test)


@pytest.mark.parametrize(
    "body",
    [
        "    p = tmp_path / 'a.txt'\n    p.write_text('x')\n    assert p.read_text() == 'x'\n",
        "    with open(os.path.join(tmp_path, 'a'), 'w') as fh:\n        fh.write('x')\n"
        "    assert os.listdir(tmp_path) == ['a']\n",
        "    d = tmp_path_factory.mktemp('d')\n    (d / 'x').touch()\n"
        "    assert (d / 'x').exists()\n",
        "    with tempfile.TemporaryDirectory() as d:\n"
        "        open(f'{d}/x', 'w').close()\n        assert os.path.exists(d)\n",
        "    fd, name = tempfile.mkstemp()\n    os.remove(name)\n    assert fd\n",
        "    p = Path(tmp_path, 'a')\n    p.write_text('x')\n    shutil.copy(p, tmp_path / 'b')\n"
        "    assert (tmp_path / 'b').read_text() == 'x'\n",
        "    con = sqlite3.connect(':memory:')\n    assert con\n",
        "    target = tmpdir.join('x')\n    target.write('y')\n    assert target.read() == 'y'\n",
    ],
)
def test_files_under_a_temporary_directory_are_allowed(body):
    test = (
        "import os\nimport shutil\nimport sqlite3\nimport tempfile\nfrom pathlib import Path\n\n\n"
        "def test_a(tmp_path, tmp_path_factory, tmpdir):\n" + body
    )
    approved, reasons = _review(test)
    assert approved, reasons


def test_node_tasks_are_refused_not_reviewed():
    with pytest.raises(AdapterFailure, match="written for pytest"):
        review(static_task(runner="node"), [FileEntry(path="test/a.test.js", content="x")])


def test_every_problem_of_every_file_is_listed_once():
    files = [
        FileEntry(path="tests/test_a.py", content="import time\n\n\ndef test_a():\n    pass\n"),
        FileEntry(path="tests/test_b.py", content="def test_b(:\n"),
    ]
    approved, reasons = review(static_task(), files)
    assert not approved
    assert reasons == [
        "tests/test_a.py: imports time: tests must not use time",
        "tests/test_a.py: test_a asserts nothing (no assert statement or pytest.raises)",
        "tests/test_b.py: does not parse as Python (line 1: invalid syntax)",
    ]
