"""What the read-only tools' digests say about pods and rollouts, as values the watch can judge.

Our server's get_pods and describe_workload print one line per pod,

    NAME phase=Running ready=0/1 restarts=47 container=c state=waiting reason=CrashLoopBackOff
         message="..." last_state=terminated last_reason=Error last_exit_code=1 node=n age=4h
    pod NAME phase=Pending ready=0/1 restarts=0 condition=PodScheduled reason=Unschedulable ...

get_pods counts healthy pods by owner instead, naming them only when few,

    checkout-6f8d9c7b5d: 3 pods ages=12s..6d nodes=node-a,node-b: checkout-6f8d9c7b5d-x7k2p(12s) ...
    checkout-6f8d9c7b5d: 2 pods age=6d nodes=node-a,node-b: checkout-6f8d9c7b5d-{x7k2p,m4q9z}
    checkout-6f8d9c7b5d: 5 pods ages=12s..6d nodes=3

(each such pod, or the unnamed group as one pod standing for its youngest, is a healthy
PodLine with `group` set to its owner), and describe_workload a Deployment's counts and
ReplicaSets,

    replicas desired=2 updated=2 ready=0 available=0
    revision 2 ReplicaSet/checkout-6f8d9c7b5d images=... desired=2 ready=0 created=...

`parse_pods` and `parse_rollout` read those lines (anything else is skipped); `failure` says how a
pod failed (crashes, cannot pull, cannot be scheduled); `unhealthy_seen` finds, in the results a
run had read, the pods of an action's target that were not healthy.
"""

import dataclasses
import re

FIELD = re.compile(r'([a-z_]+)=("(?:[^"\\]|\\.)*"|\S+)')
POD_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
RS_POD = re.compile(r"^(?P<owner>.+)-[a-z0-9]{5}$")          # a ReplicaSet's pod
ORDINAL_POD = re.compile(r"^(?P<owner>.+)-\d+$")              # a StatefulSet's pod
AGE = re.compile(r"^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")
PULL_REASONS = ("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull")
CRASH_REASONS = ("CrashLoopBackOff", "Error", "OOMKilled", "ContainerCannotRun",
                 "RunContainerError", "CreateContainerError", "StartError")


@dataclasses.dataclass
class PodLine:
    """One pod as a digest line shows it."""

    name: str
    phase: str = ""
    ready: tuple = (0, 0)
    restarts: int = 0
    reasons: tuple = ()       # every reason= on the line (state, condition), in order
    last_reason: str = ""
    age: str = ""
    line: str = ""
    group: str = ""           # a healthy pod get_pods counted under this owner (no line of its own)

    @property
    def healthy(self) -> bool:
        """Running with every container ready, or finished well."""
        return self.phase == "Succeeded" or (
            self.phase == "Running" and self.ready[1] > 0 and self.ready[0] == self.ready[1])


@dataclasses.dataclass
class Rollout:
    """A Deployment as describe_workload shows it."""

    desired: int = -1
    updated: int = -1
    ready: int = -1
    available: int = -1
    new_replicaset: str = ""
    new_ready: int = -1        # the newest ReplicaSet's ready count, from its revision line
    pods: list = dataclasses.field(default_factory=list)
    cut: bool = False          # more pods than the digest lists ("pod not shown: N more")


def fields(text) -> list:
    """[(key, value)] of a digest line, quotes taken off."""
    out = []
    for key, value in FIELD.findall(text):
        if value.startswith('"') and value.endswith('"') and len(value) >= 2:
            value = value[1:-1].replace('\\"', '"')
        out.append((key, value))
    return out


def parse_pod(line) -> "PodLine | None":
    """A pod line of get_pods (or describe_workload's, after `pod `), or None."""
    text = line[4:] if line.startswith("pod ") else line
    name, _, rest = text.partition(" ")
    if not POD_NAME.match(name) or "phase=" not in rest:
        return None
    pod = PodLine(name=name, line=line.strip())
    reasons = []
    for key, value in fields(rest):
        if key == "phase":
            pod.phase = value
        elif key == "ready" and re.fullmatch(r"\d+/\d+", value):
            pod.ready = tuple(int(n) for n in value.split("/"))
        elif key == "restarts" and value.isdigit():
            pod.restarts = int(value)
        elif key == "reason":
            reasons.append(value)
        elif key == "last_reason":
            pod.last_reason = value
        elif key == "age":
            pod.age = value
    pod.reasons = tuple(reasons)
    return pod


COUNTED = re.compile(r"^(?P<owner>[a-z0-9][-a-z0-9.]*): \d+ pods? (?:age=(?P<age>\S+)|"
                     r"ages=(?P<youngest>[^.\s]+)\.\.\S+) nodes=\S+(?:: (?P<names>.+))?$")
NAMED = re.compile(r"^(?P<name>[a-z0-9][-a-z0-9.]*?)(?:\((?P<age>[0-9dhms]+)\))?$")


GROUP = re.compile(r"^(?P<head>[a-z0-9][-a-z0-9.]*-)\{(?P<tails>[a-z0-9][-a-z0-9.,]*)\}$")


def _expanded(words):
    """Names as written, a group `HEAD-{a,b}` as HEAD-a and HEAD-b (the way a shell expands it)."""
    for word in words:
        group = GROUP.match(word)
        yield from ((group.group("head") + tail for tail in group.group("tails").split(",")) if group
                    else (word,))


def parse_counted(line) -> list:
    """The healthy pods of one counted line of get_pods (see the module docstring), or []."""
    found = COUNTED.match(line.strip())
    if not found:
        return []
    owner, youngest = found.group("owner"), found.group("age") or found.group("youngest")
    pods = []
    for word in _expanded((found.group("names") or "").split()):
        named = NAMED.match(word)
        if named:
            pods.append(PodLine(name=named.group("name"), phase="Running", ready=(1, 1),
                                age=named.group("age") or youngest, line=line.strip(), group=owner))
    return pods or [PodLine(name=owner, phase="Running", ready=(1, 1), age=youngest,
                            line=line.strip(), group=owner)]


def parse_pods(text) -> list:
    """Every pod a tool result shows: its own lines, and get_pods' counted healthy pods. A line
    that says "(state as above)" has the reasons of the line before it (the same owner's)."""
    pods, before = [], None
    for line in str(text).splitlines():
        pod = parse_pod(line)
        if pod is None:
            pods += parse_counted(line)
            continue
        if "(state as above)" in line and before is not None:
            pod.reasons, pod.last_reason = before.reasons, before.last_reason
            pod.line += f" [the state on the line above: {before.line}]"
        pods.append(pod)
        before = pod
    return pods


def parse_rollout(text) -> Rollout:
    """A Deployment's counts, its newest ReplicaSet and its pods from describe_workload."""
    rollout, newest = Rollout(), -1
    for line in str(text).splitlines():
        if line.startswith("replicas "):
            for key, value in fields(line):
                if key in ("desired", "updated", "ready", "available") and value.isdigit():
                    setattr(rollout, key, int(value))
        elif line.startswith("revision "):
            words = line.split()
            if len(words) > 2 and words[1].isdigit() and words[2].startswith("ReplicaSet/"):
                if int(words[1]) > newest:
                    newest, rollout.new_replicaset = int(words[1]), words[2].split("/", 1)[1]
                    ready = dict(fields(line)).get("ready", "")
                    rollout.new_ready = int(ready) if ready.isdigit() else -1
        elif line.startswith("pod not shown:"):
            rollout.cut = True
        elif line.startswith("pod "):
            pod = parse_pod(line)
            if pod is not None:
                rollout.pods.append(pod)
    return rollout


def failure(pod) -> str:
    """How a pod failed, in words ('' when it has not): crashes, cannot pull, unschedulable."""
    if "Unschedulable" in pod.reasons:
        return "cannot be scheduled"
    if any(reason in PULL_REASONS for reason in pod.reasons):
        return "fails to pull its image"
    if pod.restarts > 0 or any(r in CRASH_REASONS for r in pod.reasons) or \
            pod.phase == "Failed":
        return "crashes"
    return ""


def owner_prefix(pod_name) -> tuple:
    """(owner name, same_name): a ReplicaSet's pod is replaced under a new name, a StatefulSet's
    (NAME-ORDINAL) under its own."""
    ordinal = ORDINAL_POD.match(pod_name)
    if ordinal and not RS_POD.match(pod_name):
        return ordinal.group("owner"), True
    found = RS_POD.match(pod_name)
    return (found.group("owner"), False) if found else (pod_name, True)


def age_seconds(text) -> "float | None":
    """The least number of seconds a kubectl-style age (45s, 12m, 3h5m, 2d4h) can mean."""
    found = AGE.match(text or "")
    if not found or not text:
        return None
    days, hours, minutes, seconds = (int(n or 0) for n in found.groups())
    return days * 86400 + hours * 3600 + minutes * 60 + seconds


def belongs(pod_name, kind, target) -> bool:
    """True when `pod_name` is a pod of the action's target: the Deployment's ReplicaSets' pods
    (TARGET-HASH-XXXXX) for a rollout, the pod and its owner's other pods for delete_pod."""
    if kind == "delete_pod":
        owner, _ = owner_prefix(target)
        return pod_name == target or owner_prefix(pod_name)[0] == owner
    return re.fullmatch(re.escape(target) + r"-[a-z0-9]{5,10}-[a-z0-9]{5}", pod_name) is not None


def unhealthy_seen(results, kind, namespace, target) -> list:
    """The pods of the target that the run's reads (`results`: [(tool, arguments, text)] in the
    order they ran) last showed unhealthy, sorted by name."""
    last = {}
    for tool, arguments, text in results:
        if tool not in ("get_pods", "describe_workload") or not isinstance(arguments, dict) \
                or arguments.get("namespace") != namespace:
            continue
        for pod in parse_pods(text):
            if belongs(pod.name, kind, target):
                last[pod.name] = pod.healthy
    return sorted(name for name, healthy in last.items() if not healthy)


def seen_before(calls, results, arguments) -> list:
    """unhealthy_seen for a propose_action's arguments, from a run's ledger (`calls`: tool_use_id
    -> (tool, arguments), `results`: tool_use_id -> text, both in the order the calls ran)."""
    if not isinstance(arguments, dict) or not all(
            isinstance(arguments.get(k), str) for k in ("kind", "namespace", "target")):
        return []
    reads = [(name, args, results[use_id]) for use_id, (name, args) in calls.items()
             if use_id in results]
    return unhealthy_seen(reads, arguments["kind"], arguments["namespace"], arguments["target"])
