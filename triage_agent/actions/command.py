"""run_command: the runner seam's live side, an argv run without a shell, with a timeout that
kills the whole process group and keeps what the command printed before it."""

import os
import signal
import subprocess


def run_command(argv, *, timeout=60) -> tuple:
    """Run argv (no shell): (code, stdout, stderr); never raises; kills the group on timeout."""
    try:
        proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
    except FileNotFoundError as exc:
        return 127, "", f"command not found: {exc.filename or argv[0]}"
    except (OSError, ValueError, TypeError, IndexError) as exc:
        return 126, "", f"could not start command: {type(exc).__name__}: {exc}"
    try:
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, _decode(out), _decode(err)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        try:
            out, err = proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:  # a grandchild left the group and holds the pipes
            out, err = b"", b""
            proc.kill()
            proc.wait()
            proc.stdout.close()
            proc.stderr.close()
        note = f"command timed out after {timeout} s and was killed"
        return 124, _decode(out), (_decode(err) + "\n" + note).strip()


def _kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        proc.kill()


def _decode(data) -> str:
    return (data or b"").decode("utf-8", "replace")
