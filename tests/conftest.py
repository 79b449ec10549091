"""Shared pytest fixtures: `kube_sim`, a factory that starts the Kubernetes API simulator.

    def test_x(kube_sim):
        sim = kube_sim("crashloop")          # or a path to a cluster file
        run(["kubectl", "--kubeconfig", sim.kubeconfig, "get", "pods", "-A"])

Every simulator started through the factory is stopped at teardown. The kubeconfig context is
`kube-sim`; sim.journal_entries() lists the writes kubectl made.
"""

import contextlib

import pytest

from fixtures.kube_sim import start_sim


@pytest.fixture
def kube_sim():
    """Factory: kube_sim(cluster, **start_sim_options) -> running simulator."""
    with contextlib.ExitStack() as stack:
        def start(cluster, **options):
            return stack.enter_context(start_sim(cluster, **options))
        yield start
