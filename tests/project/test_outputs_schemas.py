"""The Kubernetes manifests in outputs/ are valid objects for the version the simulator claims,
by the official schemas in their strict form (tests/support/kube_schemas.py): a typo in a field
name, a field in the wrong place or a missing required one fails here before kubectl apply
would refuse it. alertmanager-receiver.yaml is Alertmanager's own configuration, not a
Kubernetes object."""

from pathlib import Path

import pytest

from tests.support.kube_schemas import describe, problems
from tests.support.yaml_docs import load_documents

OUTPUTS = Path(__file__).resolve().parents[2] / "outputs"
NOT_KUBERNETES = {"alertmanager-receiver.yaml"}
MANIFESTS = sorted(p.name for p in OUTPUTS.glob("*.yaml") if p.name not in NOT_KUBERNETES)


def test_the_manifests_are_the_yaml_files_less_the_alertmanager_configuration():
    assert MANIFESTS == ["rbac-readonly.yaml", "rbac-tls-certificates.yaml", "serve-deployment.yaml"]
    for name in NOT_KUBERNETES:
        assert all("kind" not in doc for doc in load_documents((OUTPUTS / name).read_text()))


@pytest.mark.parametrize("name", MANIFESTS)
def test_every_manifest_is_a_valid_kubernetes_object(name):
    docs = load_documents((OUTPUTS / name).read_text(encoding="utf-8"))
    assert docs and all(doc.get("apiVersion") and doc.get("kind") for doc in docs)
    failing = [(doc, found) for doc in docs if (found := problems(doc))]
    assert not failing, describe(failing)


def test_a_misplaced_field_in_a_manifest_fails():
    text = (OUTPUTS / "serve-deployment.yaml").read_text(encoding="utf-8")
    deployment = load_documents(text)[0]
    deployment["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] = "IfNotPresent"
    deployment["spec"]["template"]["spec"]["imagePullPolicy"] = "Always"  # belongs to a container
    assert problems(deployment) == [
        "spec.template.spec: Additional properties are not allowed ('imagePullPolicy' was "
        "unexpected)"]
