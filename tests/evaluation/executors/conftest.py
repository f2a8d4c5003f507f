"""The local Ray cluster fixture of the executor tests (see ``tests.support.ray_cluster``)."""

import pytest

from tests.support.missing_tools import missing
from tests.support.ray_cluster import RayCluster


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory):
    """A local Ray cluster: a head node with two CPUs (two worker processes)."""
    pytest.importorskip("ray", reason=missing("ray", "pip install -e '.[dev,ray]'"))
    cluster = RayCluster(tmp_path_factory.mktemp("ray"))
    cluster.start_node(
        "--head",
        "--num-cpus=2",
        f"--port={cluster.port}",
        "--node-ip-address=127.0.0.1",
        "--include-dashboard=false",
    )
    try:
        cluster.wait_for_cpus(2)
        yield cluster
    finally:
        cluster.stop()
