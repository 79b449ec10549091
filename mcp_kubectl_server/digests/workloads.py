"""get_workloads digest: Deployments, StatefulSets, DaemonSets, Jobs and CronJobs -> one line each.

Input is API JSON (`items` of each kind's list, the namespace's HorizontalPodAutoscalers, and the
Jobs again so a CronJob can name its last Job). A line carries the replica counts a controller
reports (desired/updated/ready/available), the conditions that are not healthy, and the HPA
that drives the workload; unhealthy workloads come first. The health rules live here, once, and
describe_workload reuses them.
"""

from datetime import datetime, timezone

from mcp_kubectl_server.digests.text import age, kv, one_line, parse_time, quoted

KINDS = ("Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob")
LINES_MAX = 200


def _cond(obj, ctype):
    return next((c for c in (obj.get("status") or {}).get("conditions") or []
                 if c.get("type") == ctype), None)


def _cond_words(cond):
    return ([f"{cond.get('type', '?')}={cond.get('status', '?')}"] + kv("reason", cond.get("reason"))
            + kv("message", cond.get("message"), quote=200))


def job_state(job):
    """(state, reason, message): Complete, Failed, Suspended or Running."""
    for ctype in ("Failed", "Complete", "Suspended"):
        cond = _cond(job, ctype)
        if cond and cond.get("status") == "True":
            return ctype, cond.get("reason", ""), cond.get("message", "")
    if (job.get("spec") or {}).get("suspend"):
        return "Suspended", "", ""
    return "Running", "", ""


def counts(obj):
    """{desired, updated, ready, available} as the object's controller reports them."""
    kind, spec, st = obj.get("kind"), obj.get("spec") or {}, obj.get("status") or {}
    if kind == "DaemonSet":
        return {"desired": st.get("desiredNumberScheduled", 0), "updated": st.get("updatedNumberScheduled", 0),
                "ready": st.get("numberReady", 0), "available": st.get("numberAvailable", 0)}
    if kind == "Job":
        return {"completions": f"{st.get('succeeded', 0)}/{spec.get('completions', 1)}",
                "active": st.get("active", 0), "failed": st.get("failed", 0),
                "backoff_limit": spec.get("backoffLimit", 6)}
    if kind == "CronJob":
        return {"active": len(st.get("active") or [])}
    desired = spec.get("replicas", 1)
    return {"desired": desired, "updated": st.get("updatedReplicas", 0),
            "ready": st.get("readyReplicas", 0), "available": st.get("availableReplicas", 0)}


def problems(obj, *, jobs=()):
    """Words naming what is unhealthy about `obj` (empty: healthy)."""
    kind, spec, st = obj.get("kind"), obj.get("spec") or {}, obj.get("status") or {}
    words = []
    if kind == "Deployment":
        for ctype, bad in (("Progressing", "False"), ("ReplicaFailure", "True"), ("Available", "False")):
            cond = _cond(obj, ctype)
            if cond and cond.get("status") == bad:
                words += _cond_words(cond)
        if spec.get("paused"):
            words.append("paused=true")
    if kind == "Job":
        state, reason, message = job_state(obj)
        if state == "Failed":
            words += ["Failed=True"] + kv("reason", reason) + kv("message", message, quote=200)
        elif state == "Running" and st.get("failed"):
            words.append(f"failed_pods={st['failed']}")
    if kind == "CronJob":
        words += _cronjob_problems(obj, jobs)
    if kind in ("Deployment", "StatefulSet", "DaemonSet"):
        c = counts(obj)
        if c["ready"] < c["desired"] or c["available"] < c["desired"]:
            words.append(f"not_ready={c['desired'] - min(c['ready'], c['available'])}")
        if c["updated"] < c["desired"]:
            words.append(f"not_updated={c['desired'] - c['updated']}")
        if kind == "DaemonSet" and st.get("numberMisscheduled"):
            words.append(f"misscheduled={st['numberMisscheduled']}")
    return words


def _cronjob_problems(cronjob, jobs):
    last = last_job(cronjob, jobs)
    if last is None:
        return []
    state, reason, _ = job_state(last)
    if state == "Failed":
        return [f"last_job={last['metadata'].get('name', '?')} state=Failed"] + kv("reason", reason)
    return []


def owned_by(obj, owner):
    """True when `obj` names `owner` (by uid, else by kind and name) among its ownerReferences."""
    meta = owner.get("metadata") or {}
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if meta.get("uid") and ref.get("uid") == meta["uid"]:
            return True
        if ref.get("kind") == owner.get("kind") and ref.get("name") == meta.get("name"):
            return True
    return False


def last_job(cronjob, jobs):
    """The newest Job the CronJob created, or None."""
    mine = [j for j in jobs if owned_by(j, cronjob)]
    return max(mine, key=lambda j: (j.get("metadata") or {}).get("creationTimestamp") or "", default=None)


def hpa_for(obj, hpas):
    """The HorizontalPodAutoscaler whose scaleTargetRef names `obj`, or None."""
    name = (obj.get("metadata") or {}).get("name")
    for hpa in hpas:
        ref = (hpa.get("spec") or {}).get("scaleTargetRef") or {}
        if ref.get("kind") == obj.get("kind") and ref.get("name") == name:
            return hpa
    return None


def _metric_words(hpa):
    words = []
    current = {(m.get("resource") or {}).get("name"): (m.get("resource") or {}).get("current") or {}
               for m in (hpa.get("status") or {}).get("currentMetrics") or [] if m.get("type") == "Resource"}
    for metric in (hpa.get("spec") or {}).get("metrics") or []:
        res = metric.get("resource") or {}
        target = res.get("target") or {}
        if metric.get("type") != "Resource" or "averageUtilization" not in target:
            words.append(f"metric={metric.get('type', '?')}")
            continue
        now = current.get(res.get("name"), {}).get("averageUtilization")
        words.append(f"{res.get('name', '?')}={'unknown' if now is None else f'{now}%'}"
                     f"/{target['averageUtilization']}%")
    return words


def hpa_words(hpa):
    """`hpa=NAME min= max= current= desired= limited=...` (or `hpa=none`)."""
    if hpa is None:
        return ["hpa=none"]
    spec, st = hpa.get("spec") or {}, hpa.get("status") or {}
    words = [f"hpa={hpa['metadata'].get('name', '?')}", f"min={spec.get('minReplicas', 1)}",
             f"max={spec.get('maxReplicas', '?')}", f"current={st.get('currentReplicas', 0)}",
             f"desired={st.get('desiredReplicas', 0)}"] + _metric_words(hpa)
    limited = _cond(hpa, "ScalingLimited")
    if limited and limited.get("status") == "True":
        words += [f"limited=yes reason={limited.get('reason', '?')}"]
        words += kv("message", limited.get("message"), quote=120)
    else:
        words.append("limited=no")
    for ctype in ("AbleToScale", "ScalingActive"):
        cond = _cond(hpa, ctype)
        if cond and cond.get("status") == "False":
            words += [f"{ctype}=False"] + kv("reason", cond.get("reason"))
            words += kv("message", cond.get("message"), quote=160)
    return words


def _detail_words(obj, jobs):
    kind, st = obj.get("kind"), obj.get("status") or {}
    if kind == "CronJob":
        spec = obj.get("spec") or {}
        words = [f"schedule={quoted(spec.get('schedule', '?'), 60)}",
                 f"suspend={str(bool(spec.get('suspend'))).lower()}",
                 f"last_schedule={st.get('lastScheduleTime') or 'never'}",
                 f"last_success={st.get('lastSuccessfulTime') or 'never'}"]
        last = last_job(obj, jobs)
        if last is not None:
            words.append(f"last_job={last['metadata'].get('name', '?')}({job_state(last)[0]})")
        return words
    if kind == "Job":
        return [f"state={job_state(obj)[0]}"]
    return []


def workload_line(obj, *, hpas=(), jobs=(), now):
    """One line: kind/name, counts, details, unhealthy conditions, HPA, age."""
    meta = obj.get("metadata") or {}
    words = [f"{obj.get('kind', '?')}/{meta.get('name', '?')}"]
    words += [f"{k}={v}" for k, v in counts(obj).items()] + _detail_words(obj, jobs)
    bad = problems(obj, jobs=jobs)
    words += (["unhealthy:"] + bad) if bad else ["healthy"]
    if obj.get("kind") in ("Deployment", "StatefulSet"):
        words += hpa_words(hpa_for(obj, hpas))
    words.append(f"age={age(meta.get('creationTimestamp'), now)}")
    return one_line(" ".join(map(str, words)), 1200)


def workloads_digest(lists, *, namespace, hpas=(), now=None):
    """{kind: [objects]} (+ HPAs) -> header and one line per workload, unhealthy first."""
    now = now or datetime.now(timezone.utc)
    jobs = [j for j in lists.get("Job") or [] if isinstance(j, dict)]
    objs = [dict(o, kind=kind) for kind in KINDS for o in lists.get(kind) or [] if isinstance(o, dict)]
    if not objs:
        return f"no workloads (Deployments, StatefulSets, DaemonSets, Jobs, CronJobs) in namespace {namespace}"
    ranked = sorted(objs, key=lambda o: (not problems(o, jobs=jobs), KINDS.index(o["kind"]),
                                         (o.get("metadata") or {}).get("name", "")))
    sick = sum(1 for o in objs if problems(o, jobs=jobs))
    lines = [f"workloads in namespace {namespace}: {len(objs)} total, {sick} not healthy"
             + (" (listed first)" if sick else "")]
    lines += [workload_line(o, hpas=hpas, jobs=jobs, now=now) for o in ranked[:LINES_MAX]]
    if len(ranked) > LINES_MAX:
        lines.append(f"not shown: {len(ranked) - LINES_MAX} more workloads")
    orphans = [h for h in hpas if not any(hpa_for(o, [h]) for o in objs)]
    for hpa in orphans:
        ref = (hpa.get("spec") or {}).get("scaleTargetRef") or {}
        lines.append(one_line(f"HorizontalPodAutoscaler/{hpa['metadata'].get('name', '?')} targets "
                              f"{ref.get('kind', '?')}/{ref.get('name', '?')}, which does not exist", 400))
    return "\n".join(lines)


def since(stamp, now):
    """`age=12m` for a timestamp, or []."""
    return [f"age={age(stamp, now)}"] if parse_time(stamp) else []
