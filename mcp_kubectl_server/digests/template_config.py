"""What a pod template mounts and how it runs, compared between two revisions.

describe_workload's revision lines name the ConfigMaps, Secrets and claims each revision mounts
(`mounts=configmap/pricing-config-v2,secret/tls`), and its `change` lines say when a rollout
switched one for another, or changed the pod's service account, image pull secrets or DNS:

    change volume config configmap pricing-config-v1 -> configmap pricing-config-v2
    change image_pull_secrets corp-registry -> none
    change dns policy=ClusterFirst -> policy=None nameservers=8.8.8.8 ...

Names only: a ConfigMap's data is read by get_config, a Secret's never.
"""

from mcp_kubectl_server.digests.pod_config import dns_line

KINDS = (("configMap", "configmap", "name"), ("secret", "secret", "secretName"),
         ("persistentVolumeClaim", "claim", "claimName"))


def _projected(vol):
    parts = []
    for source in (vol.get("projected") or {}).get("sources") or []:
        for key, kind, _ in KINDS[:2]:
            if key in source:
                parts.append(f"{kind} {(source[key] or {}).get('name', '?')}")
        parts += [k for k in source if k not in ("configMap", "secret")]
    return parts


def volume_source(vol):
    """`configmap pricing-config-v1`, `secret tls`, `claim data`, `projected (configmap a, secret b)`."""
    for key, kind, field in KINDS:
        if key in vol:
            return f"{kind} {(vol[key] or {}).get(field, '?')}"
    if "projected" in vol:
        return "projected (" + ", ".join(_projected(vol)) + ")"
    if "ephemeral" in vol:
        return "ephemeral claim"
    return ", ".join(sorted(k for k in vol if k != "name")) or "unknown"


def mounted_objects(template):
    """['configmap/pricing-config-v2', 'secret/tls', 'claim/data'] the template's volumes name."""
    names = []
    for vol in ((template or {}).get("spec") or {}).get("volumes") or []:
        for key, kind, field in KINDS:
            if key in vol:
                names.append(f"{kind}/{(vol[key] or {}).get(field, '?')}")
        names += [part.replace(" ", "/") for part in _projected(vol) if " " in part]
    return names


def _volumes(spec):
    return {v.get("name", "?"): volume_source(v) for v in (spec or {}).get("volumes") or [] if isinstance(v, dict)}


def _pull_secrets(spec):
    return ",".join(r.get("name", "?") for r in (spec or {}).get("imagePullSecrets") or []) or "none"


def config_changes(old_spec, new_spec):
    """`change ...` lines for volumes, service account, image pull secrets and DNS."""
    old_spec, new_spec = old_spec or {}, new_spec or {}
    lines = []
    before, after = _volumes(old_spec), _volumes(new_spec)
    for name in sorted(set(before) | set(after)):
        if name not in after:
            lines.append(f"change volume {name} removed (was {before[name]})")
        elif name not in before:
            lines.append(f"change volume {name} added ({after[name]})")
        elif before[name] != after[name]:
            lines.append(f"change volume {name} {before[name]} -> {after[name]}")
    accounts = [s.get("serviceAccountName") or s.get("serviceAccount") or "default" for s in (old_spec, new_spec)]
    if accounts[0] != accounts[1]:
        lines.append(f"change service_account {accounts[0]} -> {accounts[1]}")
    if _pull_secrets(old_spec) != _pull_secrets(new_spec):
        lines.append(f"change image_pull_secrets {_pull_secrets(old_spec)} -> {_pull_secrets(new_spec)}")
    dns = [dns_line(s).split(": ", 1)[0].replace("dns ", "", 1) for s in (old_spec, new_spec)]
    if dns[0] != dns[1]:
        lines.append(f"change dns {dns[0]} -> {dns[1]}")
    return lines
