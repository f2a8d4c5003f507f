"""numpy is imported with OpenBLAS on one thread, and the memory's math does not change."""

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

linux_only = pytest.mark.skipif(
    not Path("/proc/self/task").is_dir(), reason="counts threads through /proc"
)

_REPORT = (
    "import json, os, sys\n"
    "from lorelab.memory import _numpy\n"
    "_numpy.load()\n"
    "print(json.dumps({'threads': len(os.listdir('/proc/self/task')),\n"
    "                  'env': os.environ.get('OPENBLAS_NUM_THREADS')}))\n"
)


def _run(code: str, **env: str) -> str:
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")
    }
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**clean, **env},
        timeout=120,
        check=True,
    )
    return done.stdout.strip().splitlines()[-1]


@linux_only
def test_numpy_starts_no_openblas_thread_and_the_environment_is_restored():
    report = json.loads(_run(_REPORT))
    assert report == {"threads": 1, "env": None}


@linux_only
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs two cores for a second thread")
def test_minilm_starts_no_openblas_thread():
    # onnxruntime imports numpy itself: MiniLM has it imported through _numpy first. Importing
    # onnxruntime starts one thread of its own; embedding adds none.
    count = "print(json.dumps({'threads': len(os.listdir('/proc/self/task')),\n"
    count += "                  'env': os.environ.get('OPENBLAS_NUM_THREADS')}))\n"
    imported = "import json, os\nfrom lorelab.memory import _numpy\n_numpy.load()\n"
    imported += "import onnxruntime\n"
    embedded = "import json, os\nfrom lorelab.memory import _minilm\n"
    embedded += "_minilm.embed(['fix the parser'])\n"
    expected = json.loads(_run(imported + count))
    assert expected["env"] is None
    assert json.loads(_run(embedded + count)) == expected


@linux_only
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs two cores for a second thread")
def test_a_thread_count_the_user_chose_is_left_alone():
    report = json.loads(_run(_REPORT, OPENBLAS_NUM_THREADS="2"))
    assert report == {"threads": 2, "env": "2"}
    # OMP_NUM_THREADS is OpenBLAS's fallback setting: it is a choice too, and is kept.
    assert json.loads(_run(_REPORT, OMP_NUM_THREADS="2"))["env"] is None


# The operations the memory runs on vectors (see _embedding, _vectors, _search, _lessons), at
# sizes where OpenBLAS would split a matrix-vector product across threads (the default build
# threads gemv from 9,216 elements), hashed to the byte.
_MATH = (
    "import hashlib\n"
    "from lorelab.memory import _embedding, _numpy\n"
    "_numpy.load()\n"
    "import numpy as np\n"
    "rng = np.random.default_rng(7)\n"
    "matrix = rng.standard_normal((20000, 256)).astype(np.float32)\n"
    "query = rng.standard_normal(256).astype(np.float32)\n"
    "half = matrix.astype('<f2')\n"
    "parts = [\n"
    "    matrix @ query,\n"
    "    np.einsum('ij,j->i', half.astype(np.float32), query),\n"
    "    np.linalg.norm(matrix, axis=1, keepdims=True),\n"
    "    matrix[:64].mean(axis=0),\n"
    "    _embedding.embed(['fix the failing date parser test', 'pytest -q tests/test_dates.py']),\n"
    "]\n"
    "print(hashlib.sha256(b''.join(p.tobytes() for p in parts)).hexdigest())\n"
)


def test_the_memory_math_is_the_same_on_one_openblas_thread_as_on_several():
    one = _run(_MATH)
    several = _run(_MATH, OPENBLAS_NUM_THREADS="4")
    assert len(one) == len(hashlib.sha256().hexdigest())
    assert one == several
