"""get_changes digest: every change in a namespace over a window, one line each, oldest first.

    changes in namespace prod over the last 180 min (window 2026-11-29T09:00:00Z .. now): 4
    2026-11-29T11:02:05Z (58m ago) ConfigMap/checkout-flags edited: keys PRICING_V2 by kubectl-edit (Update)
    2026-11-29T11:05:00Z (55m ago) Deployment/checkout rollout to revision 4 (ReplicaSet checkout-5d8):
        container app image shop/checkout:1.8.2 -> shop/checkout:1.9.0 by helm (Update)
    2026-11-29T11:06:40Z (53m ago) Pod/checkout-5d8-x7k2p container app OOMKilled (exit 137)
    2026-11-29T11:30:12Z (30m ago) Node/node-b NotReady: KubeletNotReady (runs 2 pods of prod)

A change is a `Change(time, subject, what, who)`; the collectors below turn objects into changes,
each from what the API keeps about the past, since Kubernetes has no change log of its own:

    rollouts    a workload's revisions (ReplicaSets, ControllerRevisions) created in the window,
                with what differs from the revision before (describe_workload's template diff:
                images, env names, resources, probes, volumes and what they mount); a rollback is
                an old ReplicaSet whose revision number moved up (revision-history annotation)
    edits       managedFields entries written in the window (not the status subresource): which
                manager, which operation, which fields (a ConfigMap's keys); creation in the window
    jobs        Job starts and their ends (Complete, Failed with its reason)
    scaling     scaling events (ScalingReplicaSet, SuccessfulRescale) and an HPA's lastScaleTime
    pods        evictions, preemptions, OOM kills (events, and containers' last terminations)
    nodes       nodes that run the namespace's pods: Ready transitions, cordons, taints, new nodes

Who made a change comes from managedFields (the field manager and its operation); for a rollout,
the writer of the workload's pod template nearest before the new revision. Events name the
component that reported them. The newest CHANGES_MAX lines are kept; the older ones are counted.
"""

from collections import namedtuple
from datetime import timedelta

from mcp_kubectl_server.digests.events import event_time
from mcp_kubectl_server.digests.managed_fields import field_label, owned_paths, template_path
from mcp_kubectl_server.digests.text import age, format_time, one_line, parse_time
from mcp_kubectl_server.digests.workload_detail import (revision_number, revision_template,
                                                        template_changes)

CHANGES_MAX = 60
WHAT_MAX = 400
WRITER_SLACK = timedelta(minutes=2)  # a template write precedes its ReplicaSet by moments
EVENT_REASONS = {"Evicted": "evicted", "Preempted": "preempted", "OOMKilling": "OOM kill",
                 "ScalingReplicaSet": "scaled", "SuccessfulRescale": "autoscaled",
                 "Killing": None, "RemovingNode": "node removed",
                 "RegisteredNode": "node registered", "TaintManagerEviction": "evicted by taint"}
SCALE_REASONS = ("ScalingReplicaSet", "SuccessfulRescale")

Change = namedtuple("Change", "time subject what who")


def _meta(obj):
    return obj.get("metadata") or {}


def _subject(kind, obj):
    return f"{kind}/{_meta(obj).get('name', '?')}"


def _writes(obj):
    """(time, manager, operation, fields) per managedFields entry, status writes left out."""
    out = []
    for entry in _meta(obj).get("managedFields") or []:
        if not isinstance(entry, dict) or entry.get("subresource") == "status":
            continue
        moment = parse_time(entry.get("time"))
        if moment is not None:
            out.append((moment, entry.get("manager") or "unknown", entry.get("operation") or "?",
                        entry.get("subresource") or "", entry.get("fieldsV1") or {}))
    return out


def _by(manager, operation, subresource=""):
    return f"{manager} ({operation}{', subresource ' + subresource if subresource else ''})"


def _leaf_labels(kind, fields, obj=None):
    """The fields an entry owns, in describe_workload's words (a ConfigMap's keys by name, a
    quota's hard limits with their values now)."""
    labels = []
    hard = ((obj or {}).get("spec") or {}).get("hard") or {}
    for path in owned_paths(fields):
        names = [key.partition(":")[2] for key in path]
        if kind == "ConfigMap" and names[0] in ("data", "binaryData") and len(names) > 1:
            label = "key " + names[1]
        elif kind == "ResourceQuota" and names[:2] == ["spec", "hard"] and len(names) > 2:
            label = f"hard {names[2]}={hard.get(names[2], '?')}"
        elif names[0] in ("metadata", "spec"):
            label = field_label(path, template_path(kind))
        else:  # data, rules, subjects, roleRef, ...: the top-level field and the one below
            label = ".".join(names[:2])
        if label and label not in labels:
            labels.append(label)
    return labels


def template_writer(workload, moment):
    """Who wrote the workload's pod template nearest before `moment` (a new revision), or None."""
    kind = workload.get("kind")
    best = None
    for when, manager, operation, subresource, fields in _writes(workload):
        touches = any((field_label(p, template_path(kind)) or "").startswith("template")
                      for p in owned_paths(fields))
        if touches and when <= moment + WRITER_SLACK and (best is None or when > best[0]):
            best = (when, _by(manager, operation, subresource))
    return best[1] if best else None


def rollouts(workload, revisions, since):
    """Changes for each revision of `workload` created (or rolled back to) after `since`."""
    ordered = sorted(revisions, key=revision_number)
    out = []
    for i, rev in enumerate(ordered):
        meta = _meta(rev)
        history = (meta.get("annotations") or {}).get("deployment.kubernetes.io/revision-history")
        created = parse_time(meta.get("creationTimestamp"))
        # A rollback renumbers an old ReplicaSet: its last write, not its creation, is the change.
        moment = max([w[0] for w in _writes(rev)] + [created]) if history and created else created
        if moment is None or moment < since:
            continue
        previous = ordered[i - 1] if i else None
        head = (f"{'rollback' if history else 'rollout'} to revision {revision_number(rev)} "
                f"({rev.get('kind', '?')} {meta.get('name', '?')}"
                + (f", first rolled out as revision {history.split(',')[0]}" if history else "") + ")")
        diff = (template_changes(revision_template(previous), revision_template(rev)) if previous
                else ["first revision"])
        what = head + ": " + "; ".join(line.removeprefix("change ") for line in diff)
        out.append(Change(moment, _subject(workload.get("kind", "?"), workload), what,
                          template_writer(workload, moment)))
    return out


def edits(kind, obj, since):
    """Creation and managedFields writes of `obj` after `since`. A workload's writes of its pod
    template are its rollouts (`rollouts`), and a controller's bookkeeping of labels and
    annotations (the revision annotation) is not a change anyone made."""
    out, created = [], parse_time(_meta(obj).get("creationTimestamp"))
    if created and created >= since:
        out.append(Change(created, _subject(kind, obj), "created", None))
    for when, manager, operation, subresource, fields in _writes(obj):
        if when < since or (created and abs((when - created).total_seconds()) < 2):
            continue
        labels = _leaf_labels(kind, fields, obj)
        if kind in ROLLED and any(label.startswith("template") for label in labels):
            continue
        if manager in CONTROLLERS and not subresource and set(labels) <= {"labels", "annotations"}:
            continue
        if labels:
            shown = ", ".join(labels[:8]) + (f" and {len(labels) - 8} more" if len(labels) > 8 else "")
            out.append(Change(when, _subject(kind, obj), f"edited: {shown}",
                              _by(manager, operation, subresource)))
    return out


ROLLED = ("Deployment", "StatefulSet", "DaemonSet", "CronJob")
CONTROLLERS = ("kube-controller-manager", "kubelet", "kube-scheduler")


def job_runs(job, since):
    """A Job's start and its end (Complete or Failed, with the reason) after `since`."""
    out, st = [], job.get("status") or {}
    owner = next((f" of CronJob {o.get('name')}" for o in _meta(job).get("ownerReferences") or []
                  if o.get("kind") == "CronJob"), "")
    started = parse_time(st.get("startTime") or _meta(job).get("creationTimestamp"))
    if started and started >= since:
        out.append(Change(started, _subject("Job", job), "started" + owner, None))
    for cond in st.get("conditions") or []:
        when = parse_time(cond.get("lastTransitionTime"))
        if cond.get("status") == "True" and cond.get("type") in ("Complete", "Failed") and when and when >= since:
            why = " ".join(filter(None, [cond.get("reason"), one_line(cond.get("message") or "", 160)]))
            out.append(Change(when, _subject("Job", job), f"{cond['type'].lower()}{': ' + why if why else ''}", None))
    return out


def hpa_scaling(hpa, since):
    st = hpa.get("status") or {}
    when = parse_time(st.get("lastScaleTime"))
    if not when or when < since:
        return []
    target = (hpa.get("spec") or {}).get("scaleTargetRef") or {}
    return [Change(when, _subject("HorizontalPodAutoscaler", hpa),
                   f"scaled {target.get('kind', '?')}/{target.get('name', '?')} to "
                   f"{st.get('desiredReplicas', '?')} replicas (now {st.get('currentReplicas', '?')})",
                   "horizontal-pod-autoscaler")]


def from_events(events, since):
    """Scaling, evictions, preemptions, OOM kills and node changes as the events tell them."""
    out = []
    for event in events:
        reason = event.get("reason") or ""
        if EVENT_REASONS.get(reason) is None:
            continue
        when = event_time(event)
        if when is None or when < since:
            continue
        obj = event.get("involvedObject") or event.get("regarding") or {}
        source = (event.get("source") or {}).get("component") or event.get("reportingController") or None
        out.append(Change(when, f"{obj.get('kind', '?')}/{obj.get('name', '?')}",
                          f"{EVENT_REASONS[reason]}: {one_line(event.get('message') or event.get('note') or '', 240)}",
                          source and f"{source} (event {reason})"))
    return out


def pod_terminations(pod, since, *, eviction_told=False):
    """OOM kills of a pod's containers' last instances, and its eviction unless an event told it."""
    out, st = [], pod.get("status") or {}
    if st.get("reason") == "Evicted" and not eviction_told:  # the status keeps no eviction time: its conditions' last move
        when = max(filter(None, (parse_time(c.get("lastTransitionTime")) for c in st.get("conditions") or [])),
                   default=None)
        if when and when >= since:
            out.append(Change(when, _subject("Pod", pod), "evicted: " + one_line(st.get("message") or "", 200),
                              "kubelet"))
    for cs in (st.get("containerStatuses") or []) + (st.get("initContainerStatuses") or []):
        term = (cs.get("lastState") or {}).get("terminated") or {}
        when = parse_time(term.get("finishedAt"))
        if term.get("reason") == "OOMKilled" and when and when >= since:
            out.append(Change(when, _subject("Pod", pod),
                              f"container {cs.get('name', '?')} OOMKilled (exit {term.get('exitCode', '?')},"
                              f" restarts {cs.get('restartCount', 0)})", "kubelet"))
    return out


def node_changes(node, since, pods_here):
    """Ready transitions, cordon, taints and creation of a node that runs `pods_here` pods."""
    out, meta, spec = [], _meta(node), node.get("spec") or {}
    subject, runs = _subject("Node", node), f" (runs {pods_here} pod{'s' * (pods_here != 1)} of the namespace)"
    created = parse_time(meta.get("creationTimestamp"))
    if created and created >= since:
        out.append(Change(created, subject, "node added" + runs, None))
    for cond in (node.get("status") or {}).get("conditions") or []:
        when = parse_time(cond.get("lastTransitionTime"))
        if cond.get("type") == "Ready" and when and when >= since and not (created and when <= created):
            state = "Ready" if cond.get("status") == "True" else f"NotReady ({cond.get('status')})"
            out.append(Change(when, subject, f"became {state}: {cond.get('reason', '')}".rstrip(": ") + runs, None))
    for taint in spec.get("taints") or []:
        when = parse_time(taint.get("timeAdded"))
        if when and when >= since:
            out.append(Change(when, subject, f"taint added {taint.get('key')}"
                              f"{'=' + taint['value'] if taint.get('value') else ''}:{taint.get('effect')}" + runs, None))
    if spec.get("unschedulable"):
        for when, manager, operation, subresource, fields in _writes(node):
            if when >= since and "f:unschedulable" in (fields.get("f:spec") or {}):
                out.append(Change(when, subject, "cordoned (unschedulable)" + runs, _by(manager, operation, subresource)))
    return out


def _ago(moment, now):
    return age(format_time(moment), now)


def changes_digest(changes, *, namespace, since, now, limit=CHANGES_MAX, kind=None):
    """The get_changes text: a head line, then one line per change, oldest first, newest kept."""
    unique = sorted(set(c for c in changes if c.time is not None), key=lambda c: (c.time, c.subject, c.what))
    window = f"over the last {int((now - since).total_seconds() // 60)} min (since {format_time(since)})"
    head = f"changes in namespace {namespace}{' of kind ' + kind if kind else ''} {window}: {len(unique)}"
    if not unique:
        return head + ("\nno change found: no revision, edit, job run, scaling, eviction, OOM kill or node change"
                       " recorded in the window (events are kept for an hour; managedFields keep each"
                       " manager's latest write only)")
    lines = [head]
    shown = unique[-limit:]
    if len(unique) > limit:
        cut = unique[:-limit]
        lines.append(f"{len(cut)} more changes between {format_time(cut[0].time)} and "
                     f"{format_time(cut[-1].time)} (older, not shown: narrow with since_minutes or kind)")
    for c in shown:
        who = f" by {c.who}" if c.who else ""
        lines.append(f"{format_time(c.time)} ({_ago(c.time, now)} ago) {c.subject} "
                     f"{one_line(c.what, WHAT_MAX)}{who}")
    return "\n".join(lines)
