"""A node's platform and the exec format error that says an image was built for another one."""

from mcp_kubectl_server.digests.platform import failed_to_exec, mismatch_lines, platform, platform_words

NODE = {"metadata": {"name": "node-d"}, "status": {"nodeInfo": {
    "operatingSystem": "linux", "architecture": "arm64", "kernelVersion": "6.8.0-1015-aws",
    "containerRuntimeVersion": "containerd://1.7.24", "kubeletVersion": "v1.32.4"}}}


def pod(statuses):
    return {"spec": {"containers": [{"name": "api", "image": "shop/api:2.0.0"},
                                    {"name": "sidecar", "image": "proxy:1.2"}]},
            "status": {"containerStatuses": statuses}}


def test_the_platform_of_a_node_and_of_one_that_says_nothing():
    assert platform_words(NODE) == ["platform=linux/arm64", "kernel=6.8.0-1015-aws",
                                    "runtime=containerd://1.7.24", "kubelet=v1.32.4"]
    assert platform({"status": {}}) == "?/?"


def test_exec_format_error_in_a_start_error_message():
    broken = pod([{"name": "api", "lastState": {"terminated": {
        "reason": "StartError", "exitCode": 128, "message": "failed to create containerd task: failed to create "
        "shim task: OCI runtime create failed: runc create failed: unable to start container process: "
        "exec: \"/app/server\": exec format error: unknown"}}},
        {"name": "sidecar", "state": {"running": {}}}])
    found = failed_to_exec(broken)
    assert list(found) == ["api"] and "exec format error" in found["api"]
    [line] = mismatch_lines(broken, NODE, found)
    assert line.startswith('platform mismatch: container api failed with "failed to create containerd task')
    assert line.endswith("on node node-d (linux/arm64): image shop/api:2.0.0 is built for another CPU "
                         "architecture (or OS) than the node's")


def test_exec_format_error_only_in_the_log():
    broken = pod([{"name": "api", "lastState": {"terminated": {"reason": "Error", "exitCode": 255}}}])
    assert failed_to_exec(broken) == {}
    found = failed_to_exec(broken, {"api": "starting\nexec /usr/local/bin/api: exec format error\n"})
    assert found == {"api": "exec /usr/local/bin/api: exec format error"}


def test_a_healthy_pod_or_an_ordinary_crash_says_nothing():
    crash = pod([{"name": "api", "lastState": {"terminated": {"reason": "Error", "exitCode": 1,
                                                             "message": "panic: nil map"}}}])
    assert failed_to_exec(crash, {"api": "panic: nil map\n"}) == {}
    assert failed_to_exec(pod([{"name": "api", "state": {"running": {}}}])) == {}
