"""Every object the simulator serves is a valid Kubernetes 1.32 object, by the official schemas
in their strict form (tests/support/kube_schemas.py, kubernetes-validate's files): each cluster
file's objects as the store holds them (managedFields, default ServiceAccounts, the generated
`large` cluster), and the Endpoints and EndpointSlices derived on every read. And the check
fires, agrees with kubernetes_validate.validate(), and its one-per-shape shortcut is sound for
the schemas shipped.
"""

import copy
import json
import zipfile

import pytest

from fixtures.kube_sim.crds import check_object
from fixtures.kube_sim.store import CLUSTERS_DIR, DERIVED, RESOURCES, Store, load_cluster
from tests.support import kube_schemas
from tests.support.kube_schemas import VERSION, check_all, describe, problems

CLUSTERS = sorted(path.stem for path in CLUSTERS_DIR.glob("*.json"))
VERDICTS = {}  # {shape: problems}, shared by the cluster files: most of their objects repeat


def served(name):
    """The objects of built-in kinds a simulator of cluster `name` serves: stored, then derived.
    Objects of a kind a CRD of the file defines have no official schema: they are checked
    against their CRD's openAPIV3Schema (test_custom_objects_pass_their_crds_schema)."""
    store = Store(load_cluster(name))
    return [obj for _, obj in store.stored() if not store.catalog.is_custom_object(obj)] + [
        obj for resource in sorted(DERIVED) for obj in store._derived(resource, "")]


@pytest.mark.parametrize("name", [n for n in CLUSTERS if '"CustomResourceDefinition"' in
                                  (CLUSTERS_DIR / f"{n}.json").read_text(encoding="utf-8")])
def test_custom_objects_pass_their_crds_schema(name):
    store = Store(load_cluster(name))
    custom = [obj for _, obj in store.stored() if store.catalog.is_custom_object(obj)]
    assert custom
    for obj in custom:  # as served: with the managedFields the store adds
        check_object(obj, store.catalog.custom)


def a_node():
    return copy.deepcopy(next(o for o in served("healthy") if o["kind"] == "Node"))


@pytest.mark.parametrize("name", CLUSTERS)
def test_every_object_of_every_cluster_file_is_valid(name):
    objects = served(name)
    assert {o["kind"] for o in objects} >= {"Namespace", "Node", "Pod", "ServiceAccount"}
    assert name != "large" or len(objects) > 2000  # the generated objects are in
    failing = check_all(objects, VERDICTS)
    assert not failing, describe(failing)


def test_a_missing_required_field_an_unknown_field_and_a_wrong_type_fail():
    node = a_node()
    assert problems(node) == []
    del node["status"]["nodeInfo"]["machineID"]
    node["spec"]["colour"] = "blue"
    node["status"]["capacity"]["cpu"] = True
    found = "\n".join(problems(node))
    assert "status.nodeInfo: 'machineID' is a required property" in found
    assert "spec: Additional properties are not allowed ('colour' was unexpected)" in found
    assert "status.capacity.cpu: True is not valid under any of the given schemas" in found
    assert problems({"apiVersion": "example.com/v1", "kind": "Widget"}) == [
        f"no Kubernetes {VERSION} schema for example.com/v1 Widget"]


def test_one_check_per_shape_still_reports_every_failing_object():
    good, bad, also_bad = a_node(), a_node(), a_node()
    for node, name in ((bad, "node-x"), (also_bad, "node-y")):
        node["metadata"]["name"] = name
        del node["status"]["nodeInfo"]["bootID"]
    replicas = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                "spec": {"replicas": 2.0, "selector": {}, "template": {}}}
    fractional = copy.deepcopy(replicas)
    fractional["spec"]["replicas"] = 2.5  # same Python type, but not an integer to the schema
    failing = check_all([good, bad, replicas, also_bad, fractional])
    assert [obj["metadata"]["name"] for obj, _ in failing] == ["node-x", "node-y", "d"]
    assert failing[2][0] is fractional and "2.5 is not of type 'integer'" in failing[2][1][0]


def test_the_check_agrees_with_kubernetes_validate():
    kubernetes_validate = kube_schemas.kubernetes_validate()
    node = a_node()
    assert kubernetes_validate.validate(node, VERSION, strict=True) == VERSION
    node["spec"]["colour"] = "blue"
    with pytest.raises(kubernetes_validate.ValidationError) as raised:
        kubernetes_validate.validate(node, VERSION, strict=True)
    assert problems(node) == [f"spec: {raised.value.message}"]


def test_unpack_writes_the_package_and_one_version_s_strict_schemas_whole(tmp_path):
    wheels, into = tmp_path / "wheels", tmp_path / "unpacked"
    wheels.mkdir()
    schemas = "kubernetes_validate/kubernetes-json-schema"
    kept = ["kubernetes_validate/__init__.py", "kubernetes_validate-0.dist-info/METADATA",
            f"{schemas}/{kube_schemas.STRICT}/pod-v1.json"]
    left = [f"{schemas}/v1.31.0-local-strict/pod-v1.json", f"{schemas}/v{VERSION}.0-local/pod-v1.json",
            f"{schemas}/v{VERSION}.0-standalone-strict/pod-v1.json"]
    with zipfile.ZipFile(wheels / "kubernetes_validate-0-py3-none-any.whl", "w") as wheel:
        for name in kept + left:
            wheel.writestr(name, "{}")
    assert kube_schemas.unpack(wheels, into) == len(kept)
    written = sorted(str(p.relative_to(into)) for p in into.rglob("*") if p.is_file())
    assert written == sorted(kept) and not (tmp_path / "unpacked.partial").exists()
    (wheels / "kubernetes_validate-1-py3-none-any.whl").write_bytes(b"")
    with pytest.raises(SystemExit, match="holds 2 kubernetes_validate wheels, not one"):
        kube_schemas.unpack(wheels, tmp_path / "again")


def test_the_package_in_use_knows_the_simulator_s_version():
    package = kube_schemas.kubernetes_validate()
    versions = package.utils.all_versions()
    assert f"{VERSION}.0" in versions and package.validate(a_node(), VERSION, strict=True) == VERSION
    if package.__file__.startswith(str(kube_schemas.UNPACKED)):   # not an installed one
        assert versions == [f"{VERSION}.0"]


def test_the_schemas_are_those_of_the_pinned_kubernetes_validate():
    pinned = [line.split("==")[1].strip() for line in
              (kube_schemas.ROOT / "tests" / "requirements.txt").read_text().splitlines()
              if line.lower().startswith("kubernetes-validate==")]
    assert pinned and kube_schemas.kubernetes_validate().__version__ == pinned[0]


# Keywords that constrain a value rather than a shape: none may appear in the schemas, except an
# enum on apiVersion or kind (kept by value in the shape) and a oneOf between plain types.
VALUE_KEYWORDS = {"enum", "const", "pattern", "minLength", "maxLength", "minItems", "maxItems",
                  "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
                  "uniqueItems", "minProperties", "maxProperties", "dependentRequired",
                  "dependentSchemas", "if", "then", "else", "not", "anyOf", "allOf", "oneOf",
                  "prefixItems", "contains", "propertyNames", "patternProperties",
                  "unevaluatedProperties", "unevaluatedItems"}


def value_constraints(node, name="", found=None):
    """(property name, keyword) for each value-constraining keyword in a schema tree."""
    found = [] if found is None else found
    if isinstance(node, list):
        for item in node:
            value_constraints(item, name, found)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key in ("properties", "$defs"):
                for child, sub in value.items():
                    value_constraints(sub, child, found)
                continue
            if key == "enum" and name in kube_schemas.BY_VALUE:
                continue
            if key == "oneOf" and all(set(branch) == {"type"} for branch in value):
                continue
            if key in VALUE_KEYWORDS:
                found.append((name, key))
            value_constraints(value, name, found)
    return found


def test_the_schemas_constrain_only_what_a_shape_keeps():
    assert value_constraints(kube_schemas.definitions()) == []
    for api_version, kind, *_ in sorted(RESOURCES.values()):  # every kind the simulator serves
        schema = json.loads(kube_schemas.schema_file(api_version, kind).read_text())
        assert value_constraints(schema) == [], (api_version, kind)
    assert value_constraints({"properties": {"type": {"enum": ["A"]}}}) == [("type", "enum")]
