"""describe_pod's service account, pull secret and DNS lines, on healthy and broken pods.

Pull secrets are Secrets: the lines name them and never read them; whether one exists comes from
the kubelet's FailedToRetrieveImagePullSecret event. Messages are cut in the middle, after
redaction, so the end of a wrapped error (the 401) survives.
"""

from mcp_kubectl_server.digests.pod_config import dns_line, pull_secret_lines, service_account_line
from mcp_kubectl_server.digests.pod_detail import describe_digest

MISSING = ("Unable to retrieve some image pull secrets (corp-registry); attempting to pull the image may "
           "not succeed.")
PULL_ERROR = ('Failed to pull image "registry.corp.example.com/payments/ledger:v3.2.0": rpc error: code = Unknown '
              'desc = failed to pull and unpack image "registry.corp.example.com/payments/ledger:v3.2.0": failed '
              'to resolve reference "registry.corp.example.com/payments/ledger:v3.2.0": failed to authorize: '
              "failed to fetch oauth token: unexpected status from POST request to "
              "https://registry.corp.example.com/oauth2/token: 401 Unauthorized")


def pod(**spec):
    return {"metadata": {"name": "ledger-1", "namespace": "prod"},
            "spec": dict({"containers": [{"name": "ledger", "image": "registry.corp.example.com/x:1"}]}, **spec),
            "status": {"phase": "Running"}}


def account(*secrets, automount=None):
    sa = {"metadata": {"name": "ledger", "namespace": "prod"}}
    if secrets:
        sa["imagePullSecrets"] = [{"name": s} for s in secrets]
    if automount is not None:
        sa["automountServiceAccountToken"] = automount
    return sa


def test_a_pod_with_its_own_pull_secret_names_it_without_reading_it():
    lines = pull_secret_lines(pod(serviceAccountName="ledger", imagePullSecrets=[{"name": "corp-registry"}]),
                              account())
    assert lines[0] == "image_pull_secrets pod: corp-registry; service account ledger: none"
    assert lines[1].startswith("image_pull_secret corp-registry (from the pod): exists: not read (no tool "
                               "reads Secrets")
    assert "no FailedToRetrieveImagePullSecret event" in lines[1]


def test_the_kubelet_event_says_a_named_pull_secret_is_missing():
    event = {"reason": "FailedToRetrieveImagePullSecret", "type": "Warning", "message": MISSING}
    lines = pull_secret_lines(pod(imagePullSecrets=[{"name": "corp-registry"}]), account(), events=[event])
    assert "the kubelet reported it missing (FailedToRetrieveImagePullSecret:" in lines[1]
    assert "(corp-registry)" in lines[1]


def test_no_pull_secret_anywhere_says_the_pull_has_no_credentials_when_it_fails():
    failing = pod(serviceAccountName="ledger")
    failing["status"]["containerStatuses"] = [{"name": "ledger", "state": {"waiting": {"reason": "ImagePullBackOff"}}}]
    (line,) = pull_secret_lines(failing, account())
    assert line.startswith("image_pull_secrets pod: none; service account ledger: none: the kubelet pulls")
    assert "401 Unauthorized" in line
    healthy = pod(serviceAccountName="ledger")  # a public image needs no credentials: nothing to say
    assert pull_secret_lines(healthy, account()) == ["image_pull_secrets pod: none; service account ledger: none"]


def test_a_service_account_pull_secret_the_pod_lacks_is_explained():
    (line,) = pull_secret_lines(pod(serviceAccountName="ledger"), account("corp-registry"))
    assert "service account ledger: corp-registry: the pod has none of the service account's pull secrets" in line
    assert "recreated" in line


def test_an_unreadable_service_account_is_said_not_guessed():
    (line,) = pull_secret_lines(pod(), None, account_error="403 Forbidden")
    assert line == "image_pull_secrets pod: none; service account default: not readable (403 Forbidden)"
    assert service_account_line(pod(), None, account_error="404 not found").endswith(
        "the ServiceAccount could not be read: 404 not found")


def test_service_account_line_and_its_token_automount():
    assert service_account_line(pod(serviceAccountName="ledger"), account()) == (
        "service_account ledger (token automount: default)")
    assert service_account_line(pod(), account(automount=False)) == (
        "service_account default (token automount: false)")
    assert service_account_line(pod(automountServiceAccountToken=True), account(automount=False)).endswith(
        "(token automount: true)")


def test_dns_lines_for_each_policy():
    assert dns_line({}) == "dns policy=ClusterFirst"
    assert dns_line({"dnsPolicy": "ClusterFirst"}) == "dns policy=ClusterFirst"
    none = dns_line({"dnsPolicy": "None", "dnsConfig": {"nameservers": ["8.8.8.8"], "searches": ["corp.example.com"],
                                                       "options": [{"name": "ndots", "value": "2"},
                                                                   {"name": "edns0"}]}})
    assert none.startswith("dns policy=None nameservers=8.8.8.8 searches=corp.example.com options=ndots:2,edns0: "
                           "the pod does not use the cluster DNS")
    assert "Default" not in dns_line({"dnsPolicy": "ClusterFirstWithHostNet", "hostNetwork": True})
    assert "falls back to the node's resolv.conf" in dns_line({"hostNetwork": True})
    assert "the node's resolv.conf" in dns_line({"dnsPolicy": "Default"})


def _describe(pod_doc, events=(), sa=None):
    return describe_digest(pod_doc, owners=[], events=list(events), account=sa or account())


def test_describe_shows_identity_dns_and_preemption_of_a_healthy_pod():
    text = _describe(pod(serviceAccountName="ledger", priorityClassName="critical", priority=100000,
                         preemptionPolicy="Never", nodeName="node-a"))
    assert "service_account ledger (token automount: default)" in text.splitlines()
    assert "scheduling priority class: critical (priority 100000, preemption policy Never)" in text
    # what is at its default is named once, together, not a line each
    assert "defaults no pull secrets, dns ClusterFirst, no node selector, no tolerations" in text.splitlines()
    assert not any(ln.startswith(("dns ", "image_pull_secrets ", "scheduling node selector")) for ln in text.splitlines())


def test_describe_says_a_setting_off_its_default_on_its_own_line():
    text = _describe(pod(dnsPolicy="Default", nodeSelector={"disktype": "ssd"}, nodeName="node-a",
                         tolerations=[{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                                       "effect": "NoExecute", "tolerationSeconds": 300},
                                      {"key": "dedicated", "value": "mail", "effect": "NoSchedule"}]))
    lines = text.splitlines()
    assert next(ln for ln in lines if ln.startswith("dns policy=Default: the pod resolves names like its node"))
    assert "scheduling node selector: disktype=ssd" in lines
    assert ("scheduling tolerations: node.kubernetes.io/not-ready:NoExecute op=Exists for 300s, "
            "dedicated=mail:NoSchedule") in lines
    assert "defaults service account default, no pull secrets, no priority class" in lines
    assert not any("assigned node" in ln for ln in lines)   # the node line says it
    default_only = _describe(pod(nodeName="node-a", tolerations=[
        {"key": f"node.kubernetes.io/{key}", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
        for key in ("not-ready", "unreachable")]))
    assert any(ln.startswith("defaults ") and ", default tolerations," in ln for ln in default_only.splitlines())


def test_describe_keeps_the_end_of_a_long_waiting_message_and_event():
    broken = pod(serviceAccountName="ledger")
    broken["status"] = {"phase": "Pending", "containerStatuses": [
        {"name": "ledger", "ready": False, "restartCount": 0,
         "state": {"waiting": {"reason": "ErrImagePull", "message": PULL_ERROR.split(": ", 1)[1]}}}]}
    event = {"type": "Warning", "reason": "Failed", "message": PULL_ERROR, "count": 8,
             "involvedObject": {"kind": "Pod", "name": "ledger-1"}, "lastTimestamp": "2026-11-29T11:58:00Z"}
    alone = _describe(broken)   # no event: the state line says it all
    state = next(ln for ln in alone.splitlines() if ln.startswith("container ledger state=waiting"))
    assert state.endswith('401 Unauthorized"')
    assert "failed to pull and unpack image" in state  # the whole message fits: nothing cut
    text = _describe(broken, [event])   # the event says it (its quotes aside): said there only
    state = next(ln for ln in text.splitlines() if ln.startswith("container ledger state=waiting"))
    assert state.endswith('message="(as in the Failed event below)"')
    line = next(ln for ln in text.splitlines() if ln.startswith("event ") and "Failed" in ln)
    assert line.endswith("401 Unauthorized") and text.count("failed to pull and unpack image") == 1


def test_a_message_too_long_even_so_is_cut_in_the_middle_after_redaction():
    secret = "Authorization: Bearer plantBearer99Token"
    message = "pull failed: " + secret + " " + "x" * 3000 + " then: 401 Unauthorized"
    broken = pod()
    broken["status"] = {"phase": "Pending", "containerStatuses": [
        {"name": "ledger", "ready": False, "state": {"waiting": {"reason": "ErrImagePull", "message": message}}}]}
    state = next(ln for ln in _describe(broken).splitlines() if ln.startswith("container ledger state="))
    assert "plantBearer99Token" not in state
    assert state.endswith('401 Unauthorized"') and " ... " in state
    assert len(state) < 2200
