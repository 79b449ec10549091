"""A node's platform (OS, architecture, kernel, container runtime, kubelet) and the sign that an
image was built for another one: `exec format error` when the container starts.

    platform linux/arm64 kernel=6.8.0-1015-aws runtime=containerd://1.7.24 kubelet=v1.32.4
    platform mismatch: container api failed with "exec /app/server: exec format error" on node
      node-d (linux/arm64): image registry.example.com/shop/api:2.0.0 is built for another CPU
      architecture (or OS) than the node's

The kernel refuses to run a binary of another architecture with ENOEXEC, which the runtime prints
as `exec format error`, in the container's termination message or as the last line of its log.
"""

SIGN = "exec format error"


def platform(node):
    """`linux/arm64` for a node, from status.nodeInfo ('?' for what it does not say)."""
    info = (node.get("status") or {}).get("nodeInfo") or {}
    return f"{info.get('operatingSystem', '?')}/{info.get('architecture', '?')}"


def platform_words(node):
    """`platform=linux/amd64 kernel=... runtime=... kubelet=...` words of one node."""
    info = (node.get("status") or {}).get("nodeInfo") or {}
    return [f"platform={platform(node)}", f"kernel={info.get('kernelVersion', '?')}",
            f"runtime={info.get('containerRuntimeVersion', '?')}",
            f"kubelet={info.get('kubeletVersion', '?')}"]


def _messages(status):
    for key in ("state", "lastState"):
        for detail in ((status.get(key) or {}).values()):
            if isinstance(detail, dict) and detail.get("message"):
                yield detail["message"]


def failed_to_exec(pod, log_tails=None):
    """{container: the line that says exec format error}, from termination messages and the
    given log tails ({container: text})."""
    found = {}
    statuses = ((pod.get("status") or {}).get("containerStatuses") or []) + (
        (pod.get("status") or {}).get("initContainerStatuses") or [])
    for status in statuses:
        name = status.get("name", "?")
        texts = list(_messages(status)) + [(log_tails or {}).get(name) or ""]
        for text in texts:
            line = next((ln.strip() for ln in str(text).splitlines() if SIGN in ln.lower()), None)
            if line:
                found[name] = line
                break
    return found


def mismatch_lines(pod, node, failures):
    """One `platform mismatch` line per container that failed to exec on `node`."""
    images = {c.get("name"): c.get("image", "?") for key in ("containers", "initContainers")
              for c in (pod.get("spec") or {}).get(key) or []}
    node_name = (node.get("metadata") or {}).get("name", "?")
    return [f"platform mismatch: container {name} failed with \"{line[:200]}\" on node {node_name} "
            f"({platform(node)}): image {images.get(name, '?')} is built for another CPU architecture "
            "(or OS) than the node's" for name, line in sorted(failures.items())]
