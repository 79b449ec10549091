"""The `kubectl proxy` child: one per server process, on a unix socket, GET-only, scoped paths.

    server ──HTTP/1.1 GET──> DIR/proxy-N.sock ──kubectl proxy──> API server
            (reader.py)       (DIR is 0700)      (kubeconfig, contexts, exec plugins, certs)

kubectl keeps the credentials; the server never reads the kubeconfig. The proxy is started with
`--reject-methods` matching every method but GET and `--accept-paths` matching only the read
paths the tools use, in the allowed namespaces, plus discovery (of every group) and /version,
the custom kinds get_custom_resources has resolved through discovery (allow_custom(): the child
is started again with them), and, unless the
cluster-scoped tools are switched off, the cluster-scoped kinds the tools read: nodes,
persistent volumes, storage classes, IngressClasses, PriorityClasses, ClusterRoles and
ClusterRoleBindings, the events stored about nodes in namespace default, and the cluster-wide
pod list the node tools count pods per node with. `--reject-paths` adds a second, independent
refusal of the subresources that reach into workloads (exec, attach, portforward, proxy) and of
Secrets. Only with --read-tls-certificates (`read_tls`) does a Secret path open, and then only
GET of one Secret by name in the allowed namespaces: both filters still refuse every list, watch
and cluster-wide Secret path. With --prometheus-service NS/NAME:PORT the allow-list also opens
that one service's Prometheus query endpoints (read/prometheus.py), and nothing else behind its
proxy. kubectl splits every one of these flags on commas and matches each part unanchored, so
each part here is anchored with ^...$ and none contains a comma.

`Proxy.ensure()` starts the child on first use and waits for its "Starting to serve" line
(`prepare()` launches it early, without waiting, so that its start overlaps other work;
`wake()` lets a cancelled read stop waiting); `stop()` ends its whole process group. A child that exits is noticed by `alive()`; the reader decides when to
`restart()` it (once per failed read) and reports its exit code (`settle()`) and
`stderr_tail()`.
"""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections import deque

from mcp_kubectl_server.read.discovery import custom_paths
from mcp_kubectl_server.read.errors import CancelledError
from mcp_kubectl_server.read.prometheus import service_prefix
from mcp_kubectl_server.validate import check_label

_NAME = r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?"
# API path prefix -> namespaced resources the tools read there.
NAMESPACED = {
    "/api/v1": ("pods", "events", "services", "endpoints", "configmaps", "persistentvolumeclaims",
                "resourcequotas", "limitranges", "serviceaccounts"),
    "/apis/apps/v1": ("deployments", "replicasets", "statefulsets", "daemonsets",
                      "controllerrevisions"),
    "/apis/batch/v1": ("jobs", "cronjobs"),
    "/apis/autoscaling/v2": ("horizontalpodautoscalers",),
    "/apis/discovery.k8s.io/v1": ("endpointslices",),
    "/apis/events.k8s.io/v1": ("events",),
    "/apis/networking.k8s.io/v1": ("networkpolicies", "ingresses"),
    "/apis/coordination.k8s.io/v1": ("leases",),
    "/apis/rbac.authorization.k8s.io/v1": ("roles", "rolebindings"),
    "/apis/policy/v1": ("poddisruptionbudgets",),
}
# Cluster-scoped kinds (node, storage, priority, ingress and RBAC tools); dropped when the
# cluster-scoped reads are switched off.
CLUSTER_SCOPED = {"/api/v1": ("nodes", "persistentvolumes"),
                  "/apis/storage.k8s.io/v1": ("storageclasses",),
                  "/apis/networking.k8s.io/v1": ("ingressclasses",),
                  "/apis/scheduling.k8s.io/v1": ("priorityclasses",),
                  "/apis/rbac.authorization.k8s.io/v1": ("clusterroles", "clusterrolebindings")}
# Every method but GET: RE2 has no look-ahead, so spell out "anything that is not exactly GET".
REJECT_METHODS = r"^$,^[^G],^G$,^G[^E],^GE$,^GE[^T],^GET."
_REJECT = [r"^/api/.*/pods/.*/exec", r"^/api/.*/pods/.*/attach",  # kubectl's own defaults, kept
           r"/(pods|services|nodes)/[^/]+/(exec|attach|portforward|proxy)(/|$)",  # NAME or NAME:PORT
           r"^/api/v1/proxy(/|$)"]
REJECT_SECRETS = [r"^/api/v1/(namespaces/[^/]+/)?secrets(/|$)"]
# With --read-tls-certificates: every Secret path but one object by name stays refused here too.
REJECT_SECRETS_TLS = [r"^/api/v1/secrets(/|$)", r"^/api/v1/namespaces/[^/]+/secrets/?$",
                      r"^/api/v1/namespaces/[^/]+/secrets/[^/]+/"]
REJECT_PATHS = ",".join(_REJECT + REJECT_SECRETS)
# Prometheus' query endpoints, the only paths --prometheus-service opens behind its service proxy.
PROMETHEUS_ENDPOINTS = r"(query|query_range|series|labels|label/[a-zA-Z_][a-zA-Z0-9_]*/values|metadata)"


def reject_paths(service=None, *, read_tls=False):
    """The --reject-paths value. With `read_tls`, the Secret parts refuse every Secret path but
    GET of one by name. With a Prometheus service, services/NAME:PORT/proxy is no longer
    refused outright (accept_paths opens exactly its query endpoints); what stays refused is any
    service proxy path that does not go on with /api/v1/ (the UI, /-/ lifecycle, /federate,
    /metrics), spelt as "differs at some character" since RE2 has no look-ahead."""
    parts = _REJECT + (REJECT_SECRETS_TLS if read_tls else REJECT_SECRETS)
    if not service:
        return ",".join(parts)
    parts[2] = r"/(pods|nodes)/[^/]+/(exec|attach|portforward|proxy)(/|$)"
    parts.insert(3, r"/services/[^/]+/(exec|attach|portforward)(/|$)")
    head, rest = r"/services/[^/]+/proxy", "/api/v1/"
    parts.append(head + "/?$")
    for i, char in enumerate(rest):
        parts.append(head + _escape(rest[:i]) + "([^" + char + "]|$)")
    return ",".join(parts)
START_TIMEOUT = 15.0
STDERR_LINES = 20


def _escape(text):
    return text.replace(".", r"\.")


def accept_paths(namespaces, *, cluster_scoped=True, service=None, read_tls=False, custom=()):
    """The --accept-paths value: the read paths of the tools in `namespaces`, comma-joined; with
    `service` (--prometheus-service NS/NAME:PORT) Prometheus' query endpoints behind it; with
    `read_tls`, also GET of one Secret by name there (never a list: get_ingresses reads the TLS
    Secrets its Ingresses name, and the RBAC names which ones it may)."""
    problems = [check_label("namespace", n) for n in namespaces] or ["no namespace given"]
    if any(problems):  # the names become part of a regex: only DNS labels may
        raise ValueError("; ".join(p for p in problems if p))
    ns = "(" + "|".join(namespaces) + ")"
    parts = [r"^/version/?$", r"^/api/?$", r"^/api/v1/?$", r"^/apis/?$",
             # discovery of every group (get_api_resources; a custom kind is resolved there)
             rf"^/apis/{_NAME}(/v[0-9a-z]+)?/?$",
             rf"^/api/v1/namespaces/{ns}$", rf"^/api/v1/namespaces/{ns}/pods/{_NAME}/log$"]
    for prefix, resources in NAMESPACED.items():
        parts.append(rf"^{_escape(prefix)}/namespaces/{ns}/({'|'.join(resources)})(/{_NAME})?$")
    if read_tls:
        parts.append(rf"^/api/v1/namespaces/{ns}/secrets/{_NAME}$")
    parts += custom_paths(custom, ns, cluster_scoped=cluster_scoped)
    if cluster_scoped:
        for prefix, resources in CLUSTER_SCOPED.items():
            parts.append(rf"^{_escape(prefix)}/({'|'.join(resources)})(/{_NAME})?$")
        # The node tools count (never name) the pods of every namespace on a node, by
        # fieldSelector=spec.nodeName: the proxy cannot see the query, so this opens the
        # cluster-wide pod list, for reads our client makes only that way.
        parts.append(r"^/api/v1/pods$")
        # Events about cluster-scoped objects (nodes) are stored in namespace default.
        parts.append(r"^/api/v1/namespaces/default/events$")
        parts.append(r"^/apis/events\.k8s\.io/v1/namespaces/default/events$")
    if service:
        parts.append("^" + _escape(service_prefix(service)) + "/api/v1/" + PROMETHEUS_ENDPOINTS + "$")
    return ",".join(parts)  # no part has a comma: kubectl splits the value on them


class ProxyError(Exception):
    """The proxy could not be started; the message says why, for the model and the operator."""


def _keep_lines(stream, sink):
    for line in iter(stream.readline, b""):
        sink.append(line.decode("utf-8", "replace").rstrip())


def _parent_death_signal():
    """A preexec_fn that makes the child get SIGKILL when the server dies (even by SIGKILL), or None.

    Linux only (prctl PR_SET_PDEATHSIG). The function is looked up here, in the parent: between
    fork and exec the child may only make the C call, never import."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (ImportError, OSError, AttributeError):
        return None
    return lambda: prctl(1, signal.SIGKILL)


class Proxy:
    """One `kubectl proxy` child; `ensure()` returns the socket path of a running one.

    `kill_with_parent` (on): on Linux the child gets SIGKILL when the thread that launched it
    ends or its process dies, even by SIGKILL. It needs a preexec_fn, so each launch forks the
    whole process (a vfork otherwise): a caller that outlives its proxy by design and stops it
    itself may turn it off (the tests' in-process servers, in test processes of 200 MB).
    """

    def __init__(self, binary="kubectl", *, context=None, kubeconfig=None, namespaces=(),
                 cluster_scoped=True, service=None, read_tls=False, env=None,
                 start_timeout=START_TIMEOUT):
        self.binary = binary
        self.env = env  # the child's environment; None: this process's
        self.connection = ([f"--context={context}"] if context else []) + (
            [f"--kubeconfig={kubeconfig}"] if kubeconfig else [])
        self._scope = {"namespaces": namespaces, "cluster_scoped": cluster_scoped, "service": service,
                       "read_tls": read_tls}
        self.custom = frozenset()  # the custom kinds the allow-list opens (allow_custom)
        self.filters = self._filters()
        self.start_timeout = start_timeout
        self.kill_with_parent = True
        self.starts = 0
        self.proc = None
        self.socket_path = None
        self._dir = None
        self._stderr = deque(maxlen=STDERR_LINES)
        self._pumps = []
        self._start = None  # {"line": bool, "eof": bool} of the child being launched
        self._serving = False
        self._lock = threading.Lock()
        self._started = threading.Condition()  # notified at the serve line, at EOF, by wake()

    def _filters(self):
        accept = accept_paths(**self._scope, custom=sorted(self.custom))
        return [f"--accept-paths={accept}",
                f"--reject-paths={reject_paths(self._scope['service'], read_tls=self._scope['read_tls'])}",
                f"--reject-methods={REJECT_METHODS}",
                r"--accept-hosts=^localhost$"]

    def allow_custom(self, kinds):
        """Open the read paths of these custom kinds (discovered, read/discovery.py) too: a child
        started with a narrower allow-list is stopped, and the next ensure() starts one with
        this list (kubectl proxy takes its filters only at start). Kinds are only ever added."""
        with self._lock:
            wanted = self.custom | frozenset(kinds)
            if wanted == self.custom:
                return False
            self.custom = wanted
            self.filters = self._filters()
            if self.proc is not None:
                self._reap()  # the next ensure() launches with the new filters
                self.proc = None
            return True

    def argv(self, socket_path):
        return [self.binary, *self.connection, "proxy", f"--unix-socket={socket_path}",
                "--api-prefix=/", *self.filters]

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def prepare(self):
        """Launch the child now without waiting for it, so that its start overlaps other work;
        the first `ensure()` waits for it (and reports a failed start, launching again)."""
        with self._lock:
            if not self.alive():
                try:
                    self._launch()
                except ProxyError:
                    pass

    def ensure(self, cancelled=None):
        """The socket path of a serving proxy, starting one when none runs (ProxyError if it
        cannot; CancelledError when `cancelled()` turns true while it starts, see wake())."""
        with self._lock:
            if not self.alive():
                self._launch()
            if not self._serving:
                self._await_ready(cancelled)
            return self.socket_path

    def wake(self):
        """From another thread: make a wait for the start look at `cancelled()` again now."""
        with self._started:
            self._started.notify_all()

    def restart(self):
        """Stop the child (whatever its state) and start a new one (ProxyError if it cannot)."""
        with self._lock:
            self._launch()
            self._await_ready()

    def _launch(self):
        self._reap()
        if self._dir is None:  # mkdtemp makes it 0700: only this user can reach the socket
            try:
                self._dir = tempfile.mkdtemp(prefix="mcp-kubectl-")
            except OSError as exc:
                raise ProxyError(f"cannot make a private directory for the proxy's socket in"
                                 f" {tempfile.gettempdir()!r} ({exc.strerror}); the operator should"
                                 " point TMPDIR at a writable directory") from None
        self.starts += 1
        self.socket_path = os.path.join(self._dir, f"proxy-{self.starts}.sock")
        self._stderr.clear()
        self._serving = False
        try:
            self.proc = subprocess.Popen(
                self.argv(self.socket_path), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, env=self.env, start_new_session=True,
                preexec_fn=_parent_death_signal() if self.kill_with_parent else None)
        except FileNotFoundError:
            raise ProxyError(f"kubectl is not installed or not found at {self.binary!r}; the operator"
                             " must install it or pass --kubectl PATH") from None
        except OSError as exc:
            raise ProxyError(f"kubectl could not be started ({self.binary!r}): {exc.strerror}") from None
        start = self._start = {"line": False, "eof": False}

        def watch(stream):
            for line in iter(stream.readline, b""):
                if line.startswith(b"Starting to serve on"):
                    self._note(start, "line")
            self._note(start, "eof")  # the child exited (or closed stdout); poll() tells which

        self._pumps = [threading.Thread(target=_keep_lines, args=(self.proc.stderr, self._stderr),
                                        daemon=True),
                       threading.Thread(target=watch, args=(self.proc.stdout,), daemon=True)]
        for pump in self._pumps:
            pump.start()

    def _note(self, start, what):
        with self._started:
            start[what] = True
            self._started.notify_all()

    def _await_ready(self, cancelled=None):
        """Wait for the 'Starting to serve on' line (the socket is listening once it is printed)."""
        start, stop = self._start, (lambda: cancelled is not None and cancelled())
        with self._started:
            self._started.wait_for(lambda: start["line"] or start["eof"] or stop(), self.start_timeout)
        if not (start["line"] or start["eof"]) and stop():
            raise CancelledError()  # the child goes on starting: the next read waits for it
        if not (start["line"] or start["eof"]):
            self._kill()
            raise ProxyError(f"`kubectl proxy` did not start within {self.start_timeout:g}s"
                             + self._stderr_suffix())
        if self.proc.poll() is not None or not os.path.exists(self.socket_path):
            self._wait_exit()
            raise ProxyError(f"`kubectl proxy` exited at start (code {self.proc.returncode})"
                             + self._stderr_suffix() + "; the operator should check --kubectl,"
                             " --kubeconfig and --context")
        self._serving = True

    def settle(self, wait=0.5):
        """The exit code of a child that has exited or exits within `wait` seconds, else None;
        its stderr is then read to the end."""
        if self.proc is None:
            return None
        try:
            code = self.proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            return None
        for pump in self._pumps:
            pump.join(timeout=1)
        return code

    def _wait_exit(self):
        """Wait for the exited child's pipes to be read to the end (its last stderr lines)."""
        try:
            self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self._kill()
        for pump in self._pumps:
            pump.join(timeout=1)

    def stderr_tail(self):
        """The proxy's last stderr lines, joined on one line ('' when it wrote none)."""
        text = " | ".join(line for line in list(self._stderr) if line.strip())
        return text if len(text) <= 600 else "..." + text[-600:]

    def _stderr_suffix(self):
        tail = self.stderr_tail()
        return f": {tail}" if tail else " (it wrote nothing on stderr)"

    def _kill(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()

    def _reap(self):
        """Forget a dead (or unwanted) child and its socket file."""
        if self.proc is not None:
            if self.proc.poll() is None:
                self._kill()
            self._wait_exit()
            for stream in (self.proc.stdout, self.proc.stderr):
                stream.close()
        if self.socket_path and os.path.exists(self.socket_path):
            os.unlink(self.socket_path)

    def stop(self):
        """End the proxy's process group (SIGTERM, then SIGKILL) and remove the socket directory."""
        with self._lock:
            if self.alive():
                try:
                    os.killpg(self.proc.pid, signal.SIGTERM)
                    self.proc.wait(timeout=2)
                except (ProcessLookupError, PermissionError, subprocess.TimeoutExpired):
                    pass
            self._reap()
            self.proc = None
            if self._dir:
                shutil.rmtree(self._dir, ignore_errors=True)
                self._dir = None
