"""A real local Ray cluster for the executor tests: ``ray start --head`` (two CPUs, so two
worker processes run side by side), started once per module that asks for it, torn down by
killing the process group its ``ray start --block`` leads."""

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

RAY_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
START_TIMEOUT_S = 120


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _ray_cli() -> str:
    return str(Path(sys.executable).with_name("ray"))


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    return {**os.environ, **RAY_ENV, **(extra or {})}


class RayCluster:
    """One head node and any nodes added to it, each a ``ray start --block`` process group."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.port = _free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.groups: list[subprocess.Popen[bytes]] = []

    def start_node(self, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        with open(self.base / f"ray-node-{len(self.groups)}.log", "wb") as log:
            process = subprocess.Popen(
                [_ray_cli(), "start", "--block", "--disable-usage-stats", *args],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=_env(env),
                start_new_session=True,
            )
        self.groups.append(process)
        return process

    def cpus(self) -> float:
        probe = (
            f"import ray; ray.init(address={self.address!r}, log_to_driver=False); "
            "print(ray.cluster_resources().get('CPU', 0))"
        )
        done = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, env=_env(), timeout=120
        )
        return float(done.stdout.strip() or 0) if done.returncode == 0 else 0.0

    def wait_for_cpus(self, cpus: float) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.cpus() >= cpus:
                return
            time.sleep(2)
        raise RuntimeError(f"the Ray cluster at {self.address} did not reach {cpus} CPUs")

    def stop_node(self, process: subprocess.Popen[bytes]) -> None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                break
            try:
                process.wait(timeout=20)
                break
            except subprocess.TimeoutExpired:
                continue
        # What the node started in its group (raylet, workers) goes with it.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)

    @contextlib.contextmanager
    def odd_node(self, copy_to: Path):
        """A third node (one CPU) whose lorelab differs from the coordinator's by one line of
        ``workers/transport.py``; removed again, the cluster back at two CPUs, on exit."""
        import shutil

        import lorelab

        shutil.copytree(
            Path(lorelab.__file__).parent,
            copy_to / "lorelab",
            ignore=shutil.ignore_patterns("__pycache__"),
        )
        with open(copy_to / "lorelab" / "workers" / "transport.py", "a", encoding="utf-8") as f:
            f.write("# this node's lorelab differs from the coordinator's\n")
        node = self.start_node(
            f"--address={self.address}", "--num-cpus=1", "--node-ip-address=127.0.0.1",
            env={"PYTHONPATH": str(copy_to)},
        )  # fmt: skip
        try:
            self.wait_for_cpus(3)
            yield
        finally:
            self.stop_node(node)
            self.wait_for_cpus(2)

    def stop(self) -> None:
        for process in reversed(self.groups):
            self.stop_node(process)
