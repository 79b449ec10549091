"""Argo CD Application and the Flux kinds (Kustomization, HelmRelease, GitRepository,
HelmRepository): did the desired state from Git reach the cluster, and if not, why.

    Application    status.sync{status, revision}, status.health{status, message},
                   spec.destination{server, namespace}, spec.source{repoURL, path, targetRevision}
                   (or spec.sources[]), status.operationState{phase, message, finishedAt}
    Flux kinds     condition Ready (in the conditions above), status.lastAppliedRevision,
                   status.lastAttemptedRevision (HelmRelease v2: status.history[0] as the last
                   applied), status.artifact.revision (sources), spec.suspend
"""

from mcp_kubectl_server.digests.text import one_line


def application_lines(obj, context):
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    sync, health = status.get("sync") or {}, status.get("health") or {}
    line = f"  sync={sync.get('status', 'Unknown')}"
    if sync.get("revision") or sync.get("revisions"):
        line += f" revision={one_line(sync.get('revision') or ','.join(map(str, sync['revisions'])), 80)}"
    line += f" health={health.get('status', 'Unknown')}"
    if health.get("message"):
        line += f" health_message=\"{one_line(health['message'], 200)}\""
    lines = [line]
    dest = spec.get("destination") or {}
    lines.append(f"  destination server={one_line(dest.get('server') or dest.get('name') or '?', 120)}"
                 f" namespace={one_line(dest.get('namespace') or '(the manifests own)', 80)}")
    for i, source in enumerate(spec.get("sources") or [spec.get("source") or {}]):
        label = "source" if not spec.get("sources") else f"source[{i}]"
        lines.append(f"  {label} repo={one_line(source.get('repoURL', '?'), 160)}"
                     + (f" path={one_line(source['path'], 120)}" if source.get("path") else "")
                     + (f" chart={one_line(source['chart'], 80)}" if source.get("chart") else "")
                     + f" targetRevision={one_line(source.get('targetRevision') or 'HEAD', 80)}")
    automated = ((spec.get("syncPolicy") or {}).get("automated"))
    lines.append("  syncPolicy=" + ("automated" + (" prune" if (automated or {}).get("prune") else "")
                                    + (" selfHeal" if (automated or {}).get("selfHeal") else "")
                                    if automated is not None else "manual"))
    op = status.get("operationState") or {}
    if op:
        lines.append(f"  last operation phase={op.get('phase', '?')}"
                     + (f" finished={op['finishedAt']}" if op.get("finishedAt") else "")
                     + (f" message=\"{one_line(op['message'], 300)}\"" if op.get("message") else ""))
    return lines


def flux_lines(obj, context):
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    lines = []
    applied = status.get("lastAppliedRevision")
    history = status.get("history") or []
    if not applied and history and isinstance(history[0], dict):  # HelmRelease v2
        applied = history[0].get("chartVersion") or history[0].get("chartName")
    attempted = status.get("lastAttemptedRevision")
    revisions = "  " + (f"lastAppliedRevision={one_line(applied, 120)}" if applied else "lastAppliedRevision=none")
    if attempted:
        revisions += f" lastAttemptedRevision={one_line(attempted, 120)}"
        if applied and attempted != applied:
            revisions += " (the last attempt did not apply)"
    artifact = status.get("artifact") or {}
    if artifact.get("revision"):
        revisions += f" artifact={one_line(artifact['revision'], 120)}"
    lines.append(revisions)
    source = spec.get("sourceRef") or ((spec.get("chart") or {}).get("spec") or {}).get("sourceRef") or {}
    where = []
    if source:
        where.append(f"source={source.get('kind', '?')}/{source.get('name', '?')}")
    for key in ("url", "path", "targetNamespace", "releaseName"):
        if spec.get(key):
            where.append(f"{key}={one_line(spec[key], 160)}")
    ref = spec.get("ref") or {}
    for key in ("branch", "tag", "semver", "commit"):
        if ref.get(key):
            where.append(f"ref.{key}={one_line(ref[key], 80)}")
    if where:
        lines.append("  " + " ".join(where))
    lines.append(f"  suspended={'true' if spec.get('suspend') else 'false'}")
    return lines
