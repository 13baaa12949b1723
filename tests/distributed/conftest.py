"""The Ray cluster of the distributed tests: two nodes on this machine, started and stopped here.

The head node has no CPUs, so every env-runner actor and evaluation task lands on the second node
(two CPUs): the tests assert it by node id. The cluster is started once per session, by the
``cluster`` fixture, and stopped by it (``ray.shutdown()``, ``cluster.shutdown()``: only the
processes it started).

Ray is the ``distributed`` extra: without it these tests skip, but FAIL under ``CI`` (``.ci/run``
installs it). A test module that needs it calls ``require_distributed_extra()`` below its imports,
so that without Ray it skips at collection instead of failing to import (Ray's own modules, and
``tree``, which comes with it, are imported inside the tests).

They share one cluster, so under xdist they form one group (``xdist_group("ray")``): the README's
``python -m pytest -n 2 --dist loadgroup`` runs all of them in the same worker, one after another,
and the cluster is started once there (without ``--dist loadgroup`` each worker that gets one
starts a cluster of its own, which works but doubles the cost).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # A conftest hook sees every collected item: only this folder's tests join the group.
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.fspath).parents:
            item.add_marker(pytest.mark.xdist_group("ray"))


def _missing(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (required when CI is set)")
    pytest.skip(reason)


#: The top-level modules of the distributed extra that the tests import (``tree`` is dm-tree, a
#: dependency of ``ray[rllib]``).
DISTRIBUTED_EXTRA_MODULES = ("ray", "tree")


def require_distributed_extra() -> None:
    """Skip the calling test module at collection when the distributed extra is not installed
    (a collection error under ``CI``, which must run these tests). Looked up without importing
    Ray, which takes seconds, so a run that has it pays for it only in the tests that use it."""
    missing = [name for name in DISTRIBUTED_EXTRA_MODULES if importlib.util.find_spec(name) is None]
    if not missing:
        return
    reason = f"{', '.join(missing)} not installed (the distributed extra: pip install -e '.[distributed]')"
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (required when CI is set)", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


@pytest.fixture(scope="session")
def rllib() -> None:
    """RLlib importable (for the tests that need it but no cluster: a runner in this process)."""
    try:
        import ray.rllib  # noqa: F401
    except ImportError:
        _missing('Ray RLlib is not installed (pip install -e ".[distributed]")')


@pytest.fixture(scope="session")
def cluster():
    """A two-node ``ray.cluster_utils.Cluster`` (head: 0 CPUs; worker: 2 CPUs), connected."""
    try:
        import ray
        from ray.cluster_utils import Cluster
    except ImportError:
        _missing('Ray is not installed (pip install -e ".[distributed]")')
    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 0, "include_dashboard": False},
    )
    try:
        worker = cluster.add_node(num_cpus=2)
        ray.init(address=cluster.address, log_to_driver=False, configure_logging=False)
        cluster.wait_for_nodes()
        cluster.worker_node_id = worker.node_id
        cluster.head_node_id = cluster.head_node.node_id
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()
