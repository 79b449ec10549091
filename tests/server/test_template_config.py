"""describe_workload's revision comparison names what each revision mounts and how its pods run:
a switch from one ConfigMap to another, a dropped pull secret, a new DNS policy are named changes."""

from mcp_kubectl_server.digests.template_config import config_changes, mounted_objects, volume_source
from mcp_kubectl_server.digests.workload_detail import template_changes, workload_digest


def template(config="pricing-config-v1", **spec):
    return {"metadata": {"labels": {"app": "pricing"}},
            "spec": dict({"containers": [{"name": "pricing", "image": "pricing:v4"}],
                          "volumes": [{"name": "config", "configMap": {"name": config}},
                                      {"name": "tls", "secret": {"secretName": "pricing-tls"}},
                                      {"name": "data", "persistentVolumeClaim": {"claimName": "pricing-data"}},
                                      {"name": "scratch", "emptyDir": {}}]}, **spec)}


def test_a_configmap_switch_is_a_named_change_and_nothing_else_is():
    assert template_changes(template(), template("pricing-config-v2")) == [
        "change volume config configmap pricing-config-v1 -> configmap pricing-config-v2"]


def test_volumes_added_removed_and_pod_settings_changed():
    old = template(serviceAccountName="pricing", imagePullSecrets=[{"name": "corp-registry"}])
    new = template(dnsPolicy="None", dnsConfig={"nameservers": ["8.8.8.8"]})
    new["spec"]["volumes"] = new["spec"]["volumes"][:1] + [{"name": "cache", "emptyDir": {}}]
    assert config_changes(old["spec"], new["spec"]) == [
        "change volume cache added (emptyDir)",
        "change volume data removed (was claim pricing-data)",
        "change volume scratch removed (was emptyDir)",
        "change volume tls removed (was secret pricing-tls)",
        "change service_account pricing -> default",
        "change image_pull_secrets corp-registry -> none",
        "change dns policy=ClusterFirst -> policy=None nameservers=8.8.8.8"]
    assert config_changes(old["spec"], old["spec"]) == []


def test_what_a_revision_mounts_by_name_never_its_contents():
    assert mounted_objects(template()) == ["configmap/pricing-config-v1", "secret/pricing-tls", "claim/pricing-data"]
    projected = {"name": "bundle", "projected": {"sources": [{"configMap": {"name": "ca"}},
                                                             {"secret": {"name": "client"}},
                                                             {"serviceAccountToken": {"path": "token"}}]}}
    assert volume_source(projected) == "projected (configmap ca, secret client, serviceAccountToken)"
    assert mounted_objects({"spec": {"volumes": [projected]}}) == ["configmap/ca", "secret/client"]


def _rs(number, tmpl):
    return {"kind": "ReplicaSet", "metadata": {"name": f"pricing-{number}", "creationTimestamp": "2026-11-29T11:00:00Z",
                                              "annotations": {"deployment.kubernetes.io/revision": str(number)}},
            "spec": {"replicas": 1, "template": tmpl}, "status": {}}


def test_the_digest_shows_each_revision_mounts_and_the_switch():
    dep = {"kind": "Deployment", "metadata": {"name": "pricing", "namespace": "prod"},
           "spec": {"replicas": 1, "template": template("pricing-config-v2")}, "status": {}}
    text = workload_digest(dep, revisions=[_rs(1, template()), _rs(2, template("pricing-config-v2"))])
    assert ("revision 2 ReplicaSet/pricing-2 images=pricing:v4 desired=1 ready=0 mounts=configmap/pricing-config-v2,"
            "secret/pricing-tls,claim/pricing-data created=2026-11-29T11:00:00Z") in text.splitlines()
    assert "change volume config configmap pricing-config-v1 -> configmap pricing-config-v2" in text.splitlines()
    assert "field managers: none recorded (the object has no managedFields)" in text.splitlines()
