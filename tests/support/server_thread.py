"""The MCP server in a thread of the test's own process, behind subprocess.Popen's face: for
tests of what the server answers, not of the process around it.

    with servers_in_threads():        # the agent's MCP client (StdioPeer) starts them so
        ...
    proc = popen([sys.executable, "-m", "mcp_kubectl_server", *args], stdin=PIPE, ...)

Only `python -m mcp_kubectl_server ARGS` that would serve (its options parse, no --check) in the
test's own working directory runs in a thread; anything else (a fake server, --check, a bad
option, another cwd) starts as a real child through subprocess.Popen. The thread runs
`mcp_kubectl_server.__main__.run()` over three os.pipe()s: the bytes on the wire, their framing,
the reader threads on both sides and the kubectl proxy child (with the environment the caller
gave) are those a process would have. What is saved is the interpreter and the server's
imports: about 0.1 s of CPU a server.

What it does not prove, so the tests of those start the process: main()'s signal handlers and
its 128+N exit codes, os._exit, stdout swapped for stderr, file descriptors of its own, and the
proxy's parent-death signal (Proxy.kill_with_parent is off here: launching with it forks the
whole test process, about 10 ms of the kernel's CPU at 200 MB where a vfork costs nothing, and
the server's own close() stops the proxy; tests/server/test_proxy_life.py proves the signal on
server processes). A test that needs the process fails loudly here: `pid` is absent and
send_signal() raises.
terminate() and kill() raise an exception in the thread, as the server's SIGTERM handler does in
its main thread, and wake it (stdin is closed, the read in progress interrupted): the thread ends
with 143 (the server's answer to SIGTERM) or -9 (what Popen says of a killed child), and the
reply to a call in progress is never sent.

A server in a thread over a simulator that tests share (conftest's `shared_sim`) hands its kubectl
proxy, still running, to the next such server that would launch the very same one (the same
kubectl, kubeconfig, filters and environment), instead of stopping it: KEPT, see KeptProxies. A
proxy costs one kubectl start (about 0.03 s of CPU), and the CLI tests of one module start a
server per run over the one simulator. The server's reads, the proxy's filters and its answers
are the same; what a kept proxy does not show is its own start and stop (the tests of those use
a simulator of their own, or the server's process). A server over a simulator inside
tests/support/sim_reader.py's reads_here() has no proxy at all: its reads run the simulator's
request handler in the calling thread.
"""

import contextlib
import ctypes
import io
import os
import subprocess
import sys
import threading
import traceback

from mcp_kubectl_server.__main__ import build_parser, open_reader, parse_args, run
from mcp_kubectl_server.read.proxy import Proxy
from tests.support.sim_reader import channel_here
from triage_agent.mcp.wire import StdioPeer

MODULE = "mcp_kubectl_server"


class NoProcess(AttributeError):
    """The server runs in a thread: there is no process to name or to signal."""


class _Stopped(BaseException):
    """Raised in the server's thread by terminate() and kill()."""


class ServerInThread:
    """One server in a thread; the part of Popen's interface the clients use."""

    def __init__(self, argv, args, reader):
        self.args = argv
        self.returncode = None
        self._stopped_as = None
        self._reader = reader
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        self.stdin, self.stdout, self.stderr = (os.fdopen(in_w, "wb"), os.fdopen(out_r, "rb"),
                                                os.fdopen(err_r, "rb"))
        self._streams = (os.fdopen(in_r, "rb"), os.fdopen(out_w, "wb"),
                         io.TextIOWrapper(os.fdopen(err_w, "wb"), encoding="utf-8",
                                          errors="backslashreplace", line_buffering=True))
        self._thread = threading.Thread(target=self._serve, args=(args,), daemon=True,
                                        name=f"{MODULE} {' '.join(argv[3:])[:60]}")
        self._thread.start()

    def _serve(self, args):
        stdin, stdout, stderr = self._streams
        code = 1
        try:
            code = run(args, self._reader, stdin=stdin, stdout=stdout, stderr=stderr)
        except _Stopped:
            pass
        except BaseException:  # what an uncaught exception does to the process: a traceback, 1
            with contextlib.suppress(Exception):
                traceback.print_exc(file=stderr)
        finally:
            while True:
                try:
                    self._end(code)
                    break
                except _Stopped:  # a stop that came as run() returned: end all the same
                    continue

    def _end(self, code):
        self.returncode = code if self._stopped_as is None else self._stopped_as
        for stream in reversed(self._streams):  # stderr first: its last words are in when
            # stdout's end is seen (the process's end closes all its descriptors)
            with contextlib.suppress(Exception):
                stream.close()

    @property
    def pid(self):
        raise NoProcess("this server runs in a thread (tests/support/server_thread.py): a test"
                        " that needs its process must start it with subprocess.Popen")

    def send_signal(self, signum):
        raise NoProcess(f"signal {signum} to a server in a thread: a test that signals the server"
                        " must start its process (subprocess.Popen)")

    def poll(self):
        return self.returncode

    def wait(self, timeout=None):
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise subprocess.TimeoutExpired(self.args, timeout)
        return self.returncode

    def terminate(self):
        self._stop(143)

    def kill(self):
        self._stop(-9)

    def _stop(self, code):
        """As a stop signal does to the process: an exception raised in the server's thread
        wherever it is (once a blocking read returns: its socket is shut, stdin closed).

        With a trace or profile function in the calling thread (coverage, a debugger, cProfile),
        CPython 3.11 executes no more bytecode in it while the exception waits for a thread
        blocked in a read (3.10, 3.12 and 3.13 do), so the read would run to its own timeout:
        they are off until the read is woken."""
        if self.returncode is not None:
            return
        self._stopped_as = code
        trace, profile = sys.gettrace(), sys.getprofile()
        sys.settrace(None)
        sys.setprofile(None)
        try:
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self._thread.ident),
                                                       ctypes.py_object(_Stopped))
            with contextlib.suppress(OSError, ValueError):
                self.stdin.close()
            self._reader.interrupt()
        finally:
            sys.settrace(trace)
            sys.setprofile(profile)


def popen(argv, **options):
    """subprocess.Popen(argv, **options), or a ServerInThread when argv runs this project's server
    so that a thread can stand in for it (see the module's docstring)."""
    args = _served(argv, options)
    if args is None:
        return subprocess.Popen(argv, **options)
    try:
        reader = open_reader(args, env=options.get("env"))
    except (ValueError, OSError):  # the real process says why, and exits 2
        return subprocess.Popen(argv, **options)
    here = channel_here(args.kubeconfig)
    if here is not None:   # a simulator in reads_here(): no kubectl proxy (tests/support/sim_reader.py)
        reader._channel = here
    else:
        reader.proxy.kill_with_parent = False   # see the module's docstring
        KEPT.lend(reader, args.kubeconfig)
    return ServerInThread(list(argv), args, reader)


class KeptProxies:
    """Running kubectl proxies of finished in-thread servers, by what they were launched as, for
    the simulators named in keeping() (see the module's docstring)."""

    UNKEPT_ENV = ("PYTEST_CURRENT_TEST",)   # changes with every test; kubectl never reads it

    def __init__(self):
        self._lock = threading.Lock()
        self._kubeconfigs = set()
        self._idle = {}   # key -> [Proxy]

    @contextlib.contextmanager
    def keeping(self, kubeconfig):
        """Within: the proxies of servers reading through `kubeconfig` are kept between servers;
        at the end every kept one is stopped."""
        with self._lock:
            self._kubeconfigs.add(kubeconfig)
        try:
            yield
        finally:
            with self._lock:
                self._kubeconfigs.discard(kubeconfig)
                ended = [key for key in self._idle if key[0] == kubeconfig]
                proxies = [proxy for key in ended for proxy in self._idle.pop(key)]
            for proxy in proxies:
                Proxy.stop(proxy)

    def idle(self, kubeconfig):
        """How many proxies to `kubeconfig` wait for a server."""
        with self._lock:
            return sum(len(kept) for key, kept in self._idle.items() if key[0] == kubeconfig)

    def lend(self, reader, kubeconfig):
        """Give the reader a kept proxy that matches its own (unlaunched) one, if there is one
        (in place of the Reader's own, a private attribute: this is the tests' seam, not the
        server's), and make its close() hand the proxy back rather than stop it."""
        key = self._key(kubeconfig, reader.proxy)
        if key is None:
            return
        with self._lock:
            kept = self._idle.get(key, [])
            dead = [proxy for proxy in kept if not proxy.alive()]   # died while it waited
            kept[:] = [proxy for proxy in kept if proxy.alive()]
            if kept:
                reader._channel.proxy = kept.pop()
        for proxy in dead:
            Proxy.stop(proxy)
        proxy = reader.proxy
        proxy.stop = lambda: self._give_back(key, proxy)

    def _key(self, kubeconfig, proxy):
        if kubeconfig is None or proxy.env is None:   # None: whatever os.environ is at launch
            return None
        with self._lock:
            if kubeconfig not in self._kubeconfigs:
                return None
        env = tuple(sorted((k, v) for k, v in proxy.env.items() if k not in self.UNKEPT_ENV))
        return (kubeconfig, proxy.binary, tuple(proxy.connection), tuple(proxy.filters), env)

    def _give_back(self, key, proxy):
        with self._lock:
            if proxy.alive() and key[0] in self._kubeconfigs:
                proxy._stderr.clear()   # its lines so far were the last server's to report
                kept = self._idle.setdefault(key, [])
                if proxy not in kept:   # a second close(): it is back already, and kept once
                    kept.append(proxy)
                return
        Proxy.stop(proxy)


KEPT = KeptProxies()


def _served(argv, options):
    """The parsed options when argv is `python -m mcp_kubectl_server` serving here, else None."""
    argv = list(argv)
    if argv[:3] != [sys.executable, "-m", MODULE] or "--check" in argv:
        return None
    if os.path.realpath(options.get("cwd") or os.getcwd()) != os.path.realpath(os.getcwd()):
        return None
    parser = build_parser()
    parser._print_message = lambda message, file=None: None  # the real process says it, below
    try:
        return parse_args(argv[3:], parser)
    except SystemExit:  # --help or a bad option: the real process prints it
        return None


@contextlib.contextmanager
def servers_in_threads():
    """Within: the MCP client (triage_agent.mcp.wire.StdioPeer) starts the server through popen()."""
    saved = StdioPeer.__dict__["popen"]
    StdioPeer.popen = staticmethod(popen)
    try:
        yield
    finally:
        StdioPeer.popen = saved
