"""Long messages are cut from the middle, after redaction, wherever a digest shows one: the end of
a wrapped error says why (`...: 401 Unauthorized`, `...: AccessDenied`)."""

from datetime import datetime, timezone

from mcp_kubectl_server.digests.events import event_line
from mcp_kubectl_server.digests.pods import pod_line
from mcp_kubectl_server.digests.storage import storage_digest
from mcp_kubectl_server.digests.text import one_line

WHY = "failed to provision volume: rpc error: code = Internal desc = " + "context " * 80 + "AccessDenied"


def test_one_line_keeps_the_head_and_the_end():
    cut = one_line(WHY, 120, keep_end=True)
    assert len(cut) == 120 and cut.startswith("failed to provision volume") and cut.endswith("AccessDenied")
    assert one_line(WHY, 120).endswith("...")  # the default cut keeps the head only
    assert one_line("short", 120, keep_end=True) == "short"


def test_a_redacted_secret_stays_hidden_in_a_middle_cut():
    text = "token=plantToken77abc " + "x " * 400 + "401 Unauthorized"
    cut = one_line(text, 100, keep_end=True)
    assert "plantToken77abc" not in cut and cut.startswith("token=[REDACTED]")


def test_get_pods_event_and_storage_warning_keep_the_end():
    now = datetime(2026, 11, 29, 12, tzinfo=timezone.utc)
    pod = {"metadata": {"name": "ledger-1", "creationTimestamp": "2026-11-29T11:00:00Z"},
           "spec": {"containers": [{"name": "ledger"}]},
           "status": {"phase": "Pending", "containerStatuses": [
               {"name": "ledger", "ready": False, "state": {"waiting": {"reason": "ErrImagePull", "message": WHY}}}]}}
    assert 'AccessDenied" node=none' in pod_line(pod, now)
    event = {"type": "Warning", "reason": "ProvisioningFailed", "message": WHY,
             "involvedObject": {"kind": "PersistentVolumeClaim", "name": "data"}, "lastTimestamp": "2026-11-29T11:59:00Z"}
    assert event_line(event).endswith("AccessDenied")
    claim = {"metadata": {"name": "data", "namespace": "prod"}, "spec": {"storageClassName": "gp3"},
             "status": {"phase": "Pending"}}
    text = storage_digest({"items": [claim]}, {"items": []}, {"items": []}, namespace="prod",
                          events={"items": [event]})
    assert next(ln for ln in text.splitlines() if "last warning" in ln).endswith("AccessDenied")
