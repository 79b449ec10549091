"""describe_pod's identity, pull-credential, DNS and scheduling lines: what the kubelet uses to
start the pod. Those at their defaults are named together on one line (setting_lines):

    service_account ledger (token automount: default)
    image_pull_secrets pod: none; service account ledger: none: the kubelet pulls these images without registry credentials (unless the node has its own)
    image_pull_secret corp-registry (from the pod): exists: not checked (no tool reads Secrets, not even their names); no FailedToRetrieveImagePullSecret event about this pod
    dns policy=None nameservers=8.8.8.8 searches=corp.example.com options=ndots:2: the pod does not use the cluster DNS ...
    defaults no node selector, default tolerations, no priority class

Pull secrets are Secrets: no tool reads them, not even their metadata (the agent's RBAC grants
no Secrets, and the proxy refuses every secrets path). Whether one exists is told by the kubelet
instead: when a pod names a pull secret it cannot find, it records a Warning
`FailedToRetrieveImagePullSecret` ("Unable to retrieve some image pull secrets (NAME); ...").
The ServiceAccount admission plugin copies the ServiceAccount's imagePullSecrets into a pod
only when the pod is created without any of its own; a pod created before the ServiceAccount
got them keeps none, so the pod's list is the one its pulls use.
"""

from mcp_kubectl_server.digests.scheduling import pod_lines as scheduling_lines
from mcp_kubectl_server.digests.text import one_line

MISSING_REASON = "FailedToRetrieveImagePullSecret"
DNS_WORDS = {
    "None": ("the pod does not use the cluster DNS: every name resolves through the nameservers above "
             "only, so Service names (NAME.NAMESPACE.svc.cluster.local) resolve only if those servers know them"),
    "Default": ("the pod resolves names like its node does (the node's resolv.conf), not through the "
                "cluster DNS: Service names normally do not resolve"),
    "ClusterFirstWithHostNet": "cluster DNS first, also for a pod on the host network",
}


def _names(refs):
    return [r.get("name", "?") for r in refs or [] if isinstance(r, dict)]


def service_account_name(pod):
    spec = pod.get("spec") or {}
    return spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"


def _pull_failing(pod):
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    statuses += (pod.get("status") or {}).get("initContainerStatuses") or []
    return any(((s.get("state") or {}).get("waiting") or {}).get("reason") in ("ErrImagePull", "ImagePullBackOff")
               for s in statuses if isinstance(s, dict))


def _missing_by_kubelet(events):
    """The messages of the kubelet's FailedToRetrieveImagePullSecret events about this pod."""
    return [e.get("message") or "" for e in events or []
            if isinstance(e, dict) and e.get("reason") == MISSING_REASON]


def _secret_line(name, source, missing):
    said = [m for m in missing if name in m]
    verdict = (f"the kubelet reported it missing ({MISSING_REASON}: \"{one_line(said[-1], 300)}\")" if said
               else f"no {MISSING_REASON} event about this pod, so the kubelet found it (or has not tried yet)")
    return (f"image_pull_secret {name} (from the {source}): exists: not read (no tool reads Secrets, not "
            f"even their names); {verdict}")


def pull_secret_lines(pod, account, *, account_error=None, events=()):
    """The image_pull_secrets summary and one line per named secret.

    account: the pod's ServiceAccount JSON, or None with `account_error` saying why it is unknown."""
    sa = service_account_name(pod)
    mine = _names((pod.get("spec") or {}).get("imagePullSecrets"))
    if account is None:
        theirs, sa_text = [], f"service account {sa}: not readable ({account_error or 'unknown'})"
    else:
        theirs = _names(account.get("imagePullSecrets"))
        sa_text = f"service account {sa}: {', '.join(theirs) or 'none'}"
    words = f"image_pull_secrets pod: {', '.join(mine) or 'none'}; {sa_text}"
    if not mine and account is not None and not theirs and _pull_failing(pod):
        words += (": the kubelet pulls this pod's images without registry credentials (unless the node "
                  "has its own), and a private registry refuses that with 401 Unauthorized")
    elif not mine and theirs:
        words += (": the pod has none of the service account's pull secrets (they are copied into a pod "
                  "only when it is created without any of its own): pods created before the service "
                  "account got them pull without them until they are recreated")
    missing = _missing_by_kubelet(events)
    lines = [words] + [_secret_line(name, "pod", missing) for name in mine]
    return lines


def service_account_line(pod, account, *, account_error=None):
    spec = pod.get("spec") or {}
    sa = service_account_name(pod)
    automount = spec.get("automountServiceAccountToken")
    if automount is None and account is not None:
        automount = account.get("automountServiceAccountToken")
    text = f"service_account {sa} (token automount: " + (
        "default" if automount is None else str(bool(automount)).lower()) + ")"
    if account is None:
        text += f"; the ServiceAccount could not be read: {account_error or 'unknown'}"
    return text


def dns_line(spec):
    """`dns policy=... nameservers=... searches=... options=...` and, off the default, what it means."""
    policy = spec.get("dnsPolicy") or "ClusterFirst"
    config = spec.get("dnsConfig") or {}
    words = [f"dns policy={policy}"]
    if spec.get("hostNetwork"):
        words.append("host_network=true")
    for key, label in (("nameservers", "nameservers"), ("searches", "searches")):
        if config.get(key):
            words.append(f"{label}={','.join(map(str, config[key]))}")
    options = [o.get("name", "?") + (f":{o['value']}" if o.get("value") is not None else "")
               for o in config.get("options") or [] if isinstance(o, dict)]
    if options:
        words.append("options=" + ",".join(options))
    meaning = DNS_WORDS.get(policy)
    if policy == "ClusterFirst" and spec.get("hostNetwork"):
        meaning = "on the host network ClusterFirst falls back to the node's resolv.conf (Default)"
    return " ".join(words) + (f": {meaning}" if meaning else "")


# Settings at their defaults are named together on one `defaults` line, not a line each.
DEFAULT_SETTINGS = {"service_account default (token automount: default)": "service account default",
                    "dns policy=ClusterFirst": "dns ClusterFirst",
                    "scheduling node selector: none": "no node selector",
                    "scheduling tolerations: none": "no tolerations",
                    "scheduling priority class: none": "no priority class",
                    "scheduling priority class: none (priority 0)": "no priority class",
                    "scheduling priority class: none (priority 0, preemption policy PreemptLowerPriority)":
                        "no priority class"}
# The tolerations the DefaultTolerationSeconds admission plugin adds to every pod.
DEFAULT_TOLERATIONS = ("node.kubernetes.io/not-ready:NoExecute op=Exists for 300s",
                       "node.kubernetes.io/unreachable:NoExecute op=Exists for 300s")


def setting_lines(pod, account, account_error, events, nodes, nodes_error):
    """The service account, pull secret, DNS and scheduling lines that say something, then one
    `defaults` line naming those at their defaults. The placement is on the `node` line already."""
    lines, defaults = [], []
    for line in [service_account_line(pod, account, account_error=account_error),
                 *pull_secret_lines(pod, account, account_error=account_error, events=events),
                 dns_line(pod.get("spec") or {}), *scheduling_lines(pod, nodes, nodes_error=nodes_error)]:
        tolerations = line.removeprefix("scheduling tolerations: ").split(", ")
        if line in DEFAULT_SETTINGS:
            defaults.append(DEFAULT_SETTINGS[line])
        elif line == f"image_pull_secrets pod: none; service account {service_account_name(pod)}: none":
            defaults.append("no pull secrets")
        elif line.startswith("scheduling tolerations: ") and set(tolerations) <= set(DEFAULT_TOLERATIONS):
            defaults.append("default tolerations")
        elif not line.startswith("scheduling assigned node: "):  # the node and condition lines say it
            lines.append(line)
    return lines + ([f"defaults {', '.join(defaults)}"] if defaults else [])
