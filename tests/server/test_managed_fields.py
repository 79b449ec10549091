"""The `field` lines: who last wrote each field of a workload and its pod template (managedFields).

The entries are shaped as an API server records them (FieldsV1 tries with f:, k:{...} and `.`);
status entries are left out; co-owners are named; a workload without managedFields says so.
"""

from mcp_kubectl_server.digests.managed_fields import field_label, field_lines, last_writes, template_path


def entry(manager, operation, time, fields, subresource=None):
    made = {"manager": manager, "operation": operation, "apiVersion": "apps/v1", "time": time,
            "fieldsType": "FieldsV1", "fieldsV1": fields}
    if subresource:
        made["subresource"] = subresource
    return made


APP = 'k:{"name":"app"}'
APPLIED = {"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
           "f:spec": {"f:replicas": {}, "f:selector": {}, "f:template": {
               "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
               "f:spec": {"f:containers": {APP: {".": {}, "f:image": {}, "f:name": {},
                                                  "f:resources": {".": {}, "f:limits": {".": {}, "f:cpu": {}},
                                                                  "f:requests": {"f:cpu": {}}}}},
                          "f:volumes": {'k:{"name":"config"}': {".": {}, "f:configMap": {"f:name": {}}}}}}}}
CUT = {"f:spec": {"f:template": {"f:spec": {"f:containers": {APP: {"f:resources": {
    "f:limits": {"f:memory": {}}, "f:requests": {"f:memory": {}}}}}}}}}


def deployment(*entries):
    return {"kind": "Deployment", "metadata": {"name": "web", "managedFields": list(entries)}}


def test_the_manager_that_cut_a_limit_is_named_with_its_time():
    dep = deployment(entry("argocd-controller", "Apply", "2026-10-01T09:00:00Z", APPLIED),
                     entry("finops-rightsizer", "Update", "2026-11-29T02:00:05Z", CUT),
                     entry("kube-controller-manager", "Update", "2026-11-29T02:00:30Z",
                           {"f:status": {"f:replicas": {}}}, subresource="status"))
    lines = field_lines(dep)
    assert lines[0].startswith("fields last written (from managedFields")
    assert lines[1:] == [
        "field template container app limits.memory, template container app requests.memory: last written "
        "2026-11-29T02:00:05Z by field manager finops-rightsizer (Update)",
        "field labels, replicas, selector, template container app image, template container app limits.cpu, "
        "template container app requests.cpu, template labels, template volume config: last written "
        "2026-10-01T09:00:00Z by field manager argocd-controller (Apply)"]
    # the controller's status writes say nothing of who changed what: not shown


def test_fields_two_managers_own_name_both_newest_first_and_a_scale_subresource():
    dep = deployment(entry("helm", "Apply", "2026-11-01T00:00:00Z", {"f:spec": {"f:replicas": {}}}),
                     entry("hpa-tuner", "Apply", "2026-11-20T00:00:00Z", {"f:spec": {"f:replicas": {}}}),
                     entry("kubectl", "Update", "2026-11-28T00:00:00Z", {"f:spec": {"f:replicas": {}}},
                           subresource="scale"))
    (line,) = field_lines(dep)[1:]
    assert line == ("field replicas: last written 2026-11-28T00:00:00Z by field manager kubectl (Update, subresource "
                    "scale); also owned by hpa-tuner (Apply), helm (Apply)")


def test_no_managed_fields_says_so():
    assert field_lines({"kind": "Deployment", "metadata": {}}) == [
        "field managers: none recorded (the object has no managedFields)"]


def test_labels_of_paths_for_each_kind_of_field():
    tmpl = template_path("Deployment")
    assert field_label(("f:spec", "f:strategy", "f:rollingUpdate"), tmpl) == "strategy"
    assert field_label(("f:metadata", "f:uid"), tmpl) is None
    assert field_label(("f:status", "f:replicas"), tmpl) is None
    assert field_label(("f:spec", "f:template", "f:spec", "f:dnsPolicy"), tmpl) == "template dnsPolicy"
    assert field_label(("f:spec", "f:template", "f:spec", "f:initContainers", 'k:{"name":"init"}', "f:image"),
                       tmpl) == "template init_container init image"
    assert field_label(("f:spec", "f:template", "f:metadata", "f:annotations", "f:kubectl.kubernetes.io/restartedAt"),
                       tmpl) == "template annotations"
    cron = template_path("CronJob")
    assert field_label(("f:spec", "f:schedule"), cron) == "schedule"
    assert field_label(("f:spec", "f:jobTemplate", "f:spec", "f:template", "f:spec", "f:containers",
                        'k:{"name":"job"}', "f:resources", "f:limits", "f:memory"), cron) == (
        "template container job limits.memory")


def test_malformed_entries_are_skipped_not_fatal():
    dep = deployment("not an entry", {"manager": "x", "fieldsV1": "nonsense"},
                     entry("ok", "Update", "bad time", {"f:spec": {"f:paused": {}}}))
    assert last_writes(dep) == {"paused": [(None, "ok", "Update", "")]}
    assert field_lines(dep)[1] == "field paused: last written time=unknown by field manager ok (Update)"


def test_many_fields_are_bounded():
    fields = {"f:spec": {f"f:field{i:03d}": {} for i in range(60)}}
    lines = field_lines(deployment(entry("m", "Update", "2026-11-29T00:00:00Z", fields)), limit=10)
    assert len(lines) == 2 and lines[1].startswith("field field000, field001,")
    assert "field009 and 50 more: last written" in lines[1]
