"""Payload builders, script writers and environments shared by the worker tests."""

from __future__ import annotations

import hashlib
import os
import stat
import sys
import textwrap
from pathlib import Path
from typing import Any


def task(runner: str = "pytest") -> dict[str, Any]:
    source = (
        {
            "path": "src/clamp.py",
            "content": "def clamp(x, lo, hi):\n    return max(lo, min(x, hi))\n",
        }
        if runner == "pytest"
        else {"path": "src/clamp.js", "content": "exports.clamp = (x, lo, hi) => x;\n"}
    )
    return {
        "specificationId": "clamp-v1",
        "requirements": "Examples:\n- clamp(5, 0, 3) == 3\n",
        "runner": runner,
        "source": [source],
    }


def lesson() -> dict[str, Any]:
    return {
        "id": "lesson-1",
        "specificationId": "clamp-v0",
        "requirements": "Examples:\n- clamp(1, 0, 3) == 1\n",
        "tests": [
            {
                "path": "tests/test_clamp_old.py",
                "content": "from src.clamp_old import clamp\n\n\ndef test_boundary_upper():\n"
                "    assert clamp(3, 0, 3) == 3\n",
            }
        ],
        "score": 0.9,
    }


def architect_payload(lessons: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "protocol": "lorelab.worker/1",
        "role": "architect",
        "task": task(),
        "lessons": lessons or [],
        "limits": {"maxCases": 5},
    }


def author_payload(
    lessons: list[dict[str, Any]] | None = None, runner: str = "pytest"
) -> dict[str, Any]:
    return {
        "protocol": "lorelab.worker/1",
        "role": "author",
        "task": task(runner),
        "lessons": lessons or [],
        "plan": {"cases": [{"name": "upper", "intent": "clamp(5, 0, 3) == 3"}]},
        "limits": {"maxFiles": 2, "maxCases": 5},
    }


def reviewer_payload() -> dict[str, Any]:
    return {
        "protocol": "lorelab.worker/1",
        "role": "reviewer",
        "task": task(),
        "tests": [{"path": "tests/test_clamp.py", "content": "def test_a():\n    assert 1\n"}],
    }


def host_payload() -> dict[str, Any]:
    return {
        "protocol": "lorelab.worker/1",
        "role": "host",
        "task": {"id": "t1", "prompt": "Fix the bug in src/clamp.py"},
        "guidance": None,
        "attempt": 1,
        "lastVerification": None,
    }


def dreamer_experience(
    ident: str, verify: str = "pytest -q", commands: list[tuple[str, int]] | None = None
) -> dict[str, Any]:
    """One verified experience as a dreamer payload carries it."""
    ran = commands if commands is not None else [("ruff check .", 0), (verify, 0)]
    return {
        "id": ident,
        "task": f"Fix the rounding bug ({ident})",
        "summary": "Quantized before comparing.",
        "commands": [{"command": c, "exitCode": x} for c, x in ran],
        "verification": {"command": verify, "exitCode": 0},
    }


def dreamer_payload(
    experiences: list[dict[str, Any]] | None = None, max_candidates: int = 5
) -> dict[str, Any]:
    return {
        "protocol": "lorelab.worker/1",
        "role": "dreamer",
        "experiences": (
            experiences
            if experiences is not None
            else [dreamer_experience("exp-2"), dreamer_experience("exp-1")]
        ),
        "limits": {"maxCandidates": max_candidates},
    }


PLAN = {"cases": [{"name": "upper", "intent": "clamp(5, 0, 3) == 3"}]}


def write_script(path: Path, body: str, interpreter: str | None = None) -> Path:
    """Write an executable Python script (shebang: this interpreter) and return its path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    shebang = f"#!{interpreter or sys.executable}\n"
    path.write_text(shebang + textwrap.dedent(body).lstrip("\n"), encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def env_with_path(*directories: Path) -> dict[str, str]:
    """This process's environment with ``directories`` put first on PATH."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([*map(str, directories), env.get("PATH", "")])
    return env


STANDIN = """
import json, os, sys
here = os.path.dirname(os.path.abspath(__file__))
name = os.path.basename(__file__)
stdin = sys.stdin.read()
with open(os.path.join(here, name + ".record.json"), "w") as handle:
    json.dump({"argv": sys.argv[1:], "stdin": stdin, "cwd": os.getcwd()}, handle)
with open(os.path.join(here, name + ".out"), "rb") as handle:
    sys.stdout.buffer.write(handle.read())
sys.stderr.write(name + " stand-in ran\\n")
sys.exit(int(open(os.path.join(here, name + ".exit")).read()))
"""


def install_standin(bin_dir: Path, name: str, stdout: str, exit_code: int = 0) -> Path:
    """An executable ``name`` that records its argv, stdin and cwd, then prints ``stdout``.

    Returns the path of the JSON record it writes when it runs.
    """
    write_script(bin_dir / name, STANDIN)
    (bin_dir / f"{name}.out").write_text(stdout, encoding="utf-8")
    (bin_dir / f"{name}.exit").write_text(str(exit_code), encoding="utf-8")
    return bin_dir / f"{name}.record.json"


def sha256_of(path: Path) -> str:
    """Hex SHA-256 of a file's bytes, as an identity records them."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def bound_files(identity: Any) -> dict[tuple[str, str], Any]:
    """A bound identity's files keyed by (kind, how the argv names them)."""
    return {(f.kind, f.declared): f for f in identity.bound_files}
