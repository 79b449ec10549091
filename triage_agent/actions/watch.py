"""After an approved action ran: watch its target through the read-only tools until it worked,
did not, or cannot be told. Deterministic code: no model call, no tokens.

    watch_action(action, tools, settings) -> Verification {state, observed, checked_at, waited_s}

    looks     first after FIRST_LOOK seconds, then backing off (x1.5, at most MAX_GAP), never
              closer than MIN_GAP, the last one at the timeout; each look is one tool call:
              rollout_restart, rollout_undo   describe_workload Deployment TARGET
              delete_pod                      get_pods NAMESPACE
    recovered      rollout_*: updated = ready = available = desired and the newest ReplicaSet's
                   pods all Ready, then no restart over the quiet period;
                   delete_pod: a replacement of the same owner Ready;
                   and always: the pods the run had seen unhealthy (`action.seen`) gone or healthy
    not_recovered  the timeout came first, or at once: a new pod crashes, cannot pull its image
                   or cannot be scheduled (the pod's line is in `observed`)
    unknown        a look failed (the server is down, the namespace is out of its scope, the
                   object is gone): the error's first line is in `observed`

`say` hears a progress line when what the watch sees changes ("watching checkout: 1/3 Ready").
KeyboardInterrupt (^C, or a stop signal through terminal.StopSignals) is not caught here.
"""

import dataclasses
import time
from datetime import datetime, timezone

from mcp_kubectl_server.redact import redact
from triage_agent.actions import looks
from triage_agent.terminal import printable

STATES = ("recovered", "not_recovered", "unknown")
FIRST_LOOK, MIN_GAP, MAX_GAP, BACKOFF = 2.0, 2.0, 15.0, 1.5
DEFAULT_TIMEOUT, DEFAULT_QUIET = 180.0, 30.0
MAX_LINE = 400


@dataclasses.dataclass
class WatchSettings:
    """--verify-timeout and --verify-quiet, and the seams that make time."""

    timeout: float = DEFAULT_TIMEOUT
    quiet: float = DEFAULT_QUIET
    clock: object = time.monotonic
    sleep: object = time.sleep
    wall: object = time.time


@dataclasses.dataclass
class Verification:
    """What the watch came to; a plain record for the outcome, the audit and chat front ends."""

    state: str
    observed: list
    checked_at: str
    waited_s: float

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


class _Ended(Exception):
    def __init__(self, state, *observed):
        super().__init__(state)
        self.state, self.observed = state, [_short(o) for o in observed]


def _short(text) -> str:
    text = printable(redact(str(text)), keep_newlines=False).strip()
    return text if len(text) <= MAX_LINE else text[:MAX_LINE - 3] + "..."


def _iso(seconds) -> str:
    stamp = datetime.fromtimestamp(seconds, timezone.utc)
    return stamp.isoformat(timespec="seconds").replace("+00:00", "Z")


class _Watch:
    """One watch: the looks so far and what they showed."""

    def __init__(self, action, tools, settings, say):
        self.kind, self.namespace, self.target = action["kind"], action["namespace"], \
            action["target"]
        self.seen = list(action.get("seen") or ())
        self.tools, self.settings, self.say = tools, settings, say
        self.started = settings.clock()
        self.complete_since = None
        self.last_progress = None
        self.status = "no look yet"   # what stands in the way, for a window that runs out

    def elapsed(self) -> float:
        return self.settings.clock() - self.started

    def read(self, tool, arguments) -> str:
        try:
            text, is_error = self.tools.call(tool, arguments)
        except Exception as exc:  # McpError (the server died) or any tool failure
            raise _Ended("unknown", f"could not read {tool}: {type(exc).__name__}: {exc}") \
                from None
        text = redact(text if isinstance(text, str) else str(text))
        if is_error:
            first = next((line for line in text.splitlines() if line.strip()), "no detail")
            raise _Ended("unknown", f"could not read {tool}: {first}")
        return text

    def progress(self, line):
        if line != self.last_progress:
            self.last_progress = line
            try:
                self.say(f"watching {self.target}: {line}")
            except Exception:  # a line not shown changes nothing
                pass

    def leftovers(self, pods) -> tuple:
        """(names of the pods seen unhealthy that still are, words on the rest)."""
        by_name = {pod.name: pod for pod in pods}
        still = [name for name in self.seen if name in by_name and not by_name[name].healthy]
        if still or not self.seen:
            return still, []
        gone = sum(name not in by_name for name in self.seen)
        words = []
        if gone:
            words.append(f"{gone} pod(s) unhealthy before the action are gone")
        if len(self.seen) - gone:
            words.append(f"{len(self.seen) - gone} pod(s) unhealthy before the action are "
                         "healthy now")
        return still, words

    def look(self) -> "list | None":
        """One look: the observations when recovered, None to look again; _Ended otherwise."""
        if self.kind == "delete_pod":
            return self.look_replacement()
        return self.look_rollout()

    def look_rollout(self):
        text = self.read("describe_workload", {"namespace": self.namespace, "kind": "Deployment",
                                               "name": self.target})
        rollout = looks.parse_rollout(text)
        if rollout.desired < 0 or not rollout.new_replicaset:
            raise _Ended("unknown", "describe_workload did not show the Deployment's replicas "
                         "and revisions")
        new = [p for p in rollout.pods if p.name.startswith(rollout.new_replicaset + "-")]
        for pod in new:
            how = looks.failure(pod)
            if how:
                raise _Ended("not_recovered", f"new pod {pod.name} {how}: {pod.line}")
        ready = sum(p.healthy for p in new)
        restarts = sum(p.restarts for p in new)
        if rollout.cut:   # more pods than listed: the newest ReplicaSet's own count says it
            ready = max(ready, rollout.new_ready)
        complete = (rollout.updated == rollout.ready == rollout.available == rollout.desired
                    and ready == rollout.desired
                    and (rollout.cut or len(new) == rollout.desired))
        still, words = self.leftovers(rollout.pods)
        self.progress(f"{ready}/{rollout.desired} Ready, {restarts} restarts"
                      + (f", {len(still)} still unhealthy from before" if still else ""))
        if not complete or still:
            self.complete_since = None
            self.status = (f"rollout of {rollout.new_replicaset} incomplete: {ready}/"
                           f"{rollout.desired} Ready (updated {rollout.updated}, available "
                           f"{rollout.available})" + (f"; still unhealthy: {', '.join(still)}"
                                                      if still else ""))
            return None
        if self.complete_since is None:
            self.complete_since = self.settings.clock()
        quiet_for = self.settings.clock() - self.complete_since
        self.status = (f"rollout complete, waiting for {self.settings.quiet:g} s without a "
                       f"restart ({quiet_for:.0f} s so far)")
        if quiet_for < self.settings.quiet:
            return None
        observed = [f"{ready}/{rollout.desired} pods of ReplicaSet {rollout.new_replicaset} Ready"]
        if self.settings.quiet > 0:
            observed.append(f"restarts unchanged for {quiet_for:.0f} s")
        return observed + words

    def look_replacement(self):
        text = self.read("get_pods", {"namespace": self.namespace})
        pods = looks.parse_pods(text)
        owner, same_name = looks.owner_prefix(self.target)
        young = self.elapsed() + 5   # ages are whole seconds (minutes past 60 s)

        def age(pod):
            seconds = looks.age_seconds(pod.age)
            return young + 1 if seconds is None else seconds
        fresh = sorted((p for p in pods
                        if (p.name == self.target if same_name else
                            p.name != self.target and looks.owner_prefix(p.name)[0] == owner)
                        and age(p) <= young), key=age)   # the youngest first
        if not fresh:
            self.progress(f"waiting for a replacement of {self.target}")
            self.status = f"no replacement of {self.target} (owner {owner}) has appeared"
            return None
        for pod in fresh:
            how = looks.failure(pod)
            if how:
                raise _Ended("not_recovered", f"replacement {pod.name} {how}: {pod.line}")
        ready = [p for p in fresh if p.healthy]
        still, words = self.leftovers(pods)
        newest = fresh[0]
        self.progress(f"replacement {newest.name} {newest.phase} "
                      f"{newest.ready[0]}/{newest.ready[1]} ready"
                      + (f", {len(still)} still unhealthy from before" if still else ""))
        self.status = f"replacement {newest.name} not Ready: {newest.line}"
        if not ready or still:
            if still:
                self.status = f"still unhealthy: {', '.join(still)}"
            return None
        gone = [f"{self.target} is gone"] if all(p.name != self.target for p in pods) or \
            same_name else []
        return [f"replacement {ready[0].name} of {owner} Ready"] + gone + words


def watch_action(action, tools, settings=None, *, say=None) -> Verification:
    """Watch one executed action ({kind, namespace, target, seen}) to its Verification."""
    settings = settings or WatchSettings()
    watch = _Watch(action, tools, settings, say or (lambda line: None))
    gap = min(FIRST_LOOK, settings.timeout)
    while True:
        settings.sleep(max(0.0, gap))
        try:
            observed = watch.look()
        except _Ended as ended:
            return _verdict(settings, watch, ended.state, ended.observed)
        if observed is not None:
            return _verdict(settings, watch, "recovered", [_short(o) for o in observed])
        left = settings.timeout - watch.elapsed()
        if left < min(MIN_GAP, settings.timeout):   # no room for another look in the window
            return _verdict(settings, watch, "not_recovered", [
                _short(f"not recovered within {settings.timeout:g} s: {watch.status}")])
        gap = max(MIN_GAP, min(gap * BACKOFF, MAX_GAP))
        if watch.complete_since is not None:   # the quiet period's end is worth a look
            quiet_left = settings.quiet - (settings.clock() - watch.complete_since)
            gap = max(MIN_GAP, min(gap, quiet_left))
        gap = min(gap, left)


def _verdict(settings, watch, state, observed) -> Verification:
    return Verification(state=state, observed=list(observed), checked_at=_iso(settings.wall()),
                        waited_s=round(watch.elapsed(), 1))


def broken(why, *, wall=time.time) -> dict:
    """The Verification of a watch that could not run at all (`why`: an exception or words)."""
    if isinstance(why, BaseException):
        why = f"the watch failed ({type(why).__name__}: {why})"
    return Verification(state="unknown", observed=[_short(why)], checked_at=_iso(wall()),
                        waited_s=0.0).to_dict()


def result_line(action, verification) -> str:
    """The one line a person reads: what was watched and what it came to."""
    what = f"{action.get('kind')} {action.get('namespace')}/{action.get('target')}"
    state = verification["state"] if isinstance(verification, dict) else verification.state
    data = verification if isinstance(verification, dict) else verification.to_dict()
    head = {"recovered": "recovered", "not_recovered": "NOT recovered",
            "unknown": "unknown (could not tell)"}.get(state, state)
    detail = "; ".join(data.get("observed") or ())
    return printable(f"verification of {what}: {head} after {data.get('waited_s', 0):g} s"
                     + (f" ({detail})" if detail else ""), keep_newlines=False)
