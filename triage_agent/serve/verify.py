"""The watch after serve ran an approved action: the same deterministic watch as the CLI's
(actions/watch.py), through a read-only MCP server of its own for the action's namespace (the
runs' server is gone by then), in a thread, so the decision's HTTP answer does not wait for it.

    watcher(run_options, say, stop) -> verify(record) -> Verification dict, or None
                                       (--verify-timeout 0)

When serve stops (`stop` set), a watch still going ends at its next wait, its server closed, as
unknown: "serve stopped while watching".

approvals.Store calls verify after an executed approval and writes its result into the record
(`verification`), the run's audit log and, through `changed`, the outcome file and its forward.
"""

import os
import threading

from triage_agent.actions import watch
from triage_agent.options import PROJECT_ROOT, server_argv


class ServeStoppedError(Exception):
    """serve is stopping: the watch ends where it is."""


def watcher(run, say, stop=None):
    """The Store's verify seam for these run options; None when the watch is off."""
    if not getattr(run, "verify_timeout", 0):
        return None
    stop = stop or threading.Event()

    def sleep(seconds):
        if stop.wait(seconds):
            raise ServeStoppedError("serve stopped while watching")
    settings = watch.WatchSettings(timeout=run.verify_timeout, quiet=run.verify_quiet,
                                   sleep=sleep)

    def verify(record):
        from triage_agent.mcp.client import McpError, McpStdioClient
        action = {key: record.get(key) for key in ("kind", "namespace", "target")}
        action["seen"] = list(record.get("seen") or ())
        env = {} if run.mcp else {"PYTHONPATH": os.pathsep.join(filter(None, [
            str(PROJECT_ROOT), os.environ.get("PYTHONPATH")]))}
        tools = McpStdioClient(server_argv(run, [action["namespace"]]), env=env,
                               call_timeout=run.mcp_timeout)
        prefix = f"approval {record.get('id')}: "
        try:
            tools.start()
        except McpError as exc:   # no server: the watch can tell nothing
            found = watch.broken(f"the MCP server did not start: {exc}")
            say(prefix + watch.result_line(action, found))
            return found
        try:
            found = watch.watch_action(action, tools, settings,
                                       say=lambda line: say(prefix + line)).to_dict()
        except ServeStoppedError as exc:
            found = watch.broken(str(exc))
        finally:
            tools.close()
        say(prefix + watch.result_line(action, found))
        return found
    return verify
