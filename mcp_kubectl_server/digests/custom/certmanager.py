"""cert-manager Certificate, Issuer and ClusterIssuer: is the certificate valid, when does it
renew, who issues it and is that issuer ready.

    Certificate  spec.secretName (the Secret it writes: named, never read), spec.issuerRef{name,
                 kind, group}, spec.dnsNames, status.notAfter, status.renewalTime, conditions
                 Ready / Issuing, status.failedIssuanceAttempts, status.lastFailureTime
    Issuer       the issuer type (acme, ca, selfSigned, vault, venafi) and where it points,
                 condition Ready and its message; ClusterIssuer the same, read by name

`context["issuers"]` maps (kind, name) of the issuers the Certificates name to the object (or a
string saying why it could not be read).
"""

from mcp_kubectl_server.digests.custom.common import condition
from mcp_kubectl_server.digests.text import age, one_line, parse_time

ISSUER_TYPES = ("acme", "ca", "selfSigned", "vault", "venafi")


def _ready_text(obj):
    ready = condition(obj, "Ready")
    text = f"ready={ready.get('status', 'Unknown')}"
    if ready.get("reason"):
        text += f" reason={one_line(ready['reason'], 80)}"
    if ready.get("message"):
        text += f" message=\"{one_line(ready['message'], 300)}\""
    return text


def _when(stamp, now):
    moment = parse_time(stamp)
    if moment is None:
        return "unknown"
    if moment <= now:
        return f"{stamp} (EXPIRED {age(stamp, now)} ago)"
    return f"{stamp} (in {age(now.isoformat(), moment)})"


def certificate_lines(obj, context):
    spec, status, now = obj.get("spec") or {}, obj.get("status") or {}, context["now"]
    ref = spec.get("issuerRef") or {}
    issuer_kind = ref.get("kind") or "Issuer"
    lines = [f"  notAfter={_when(status.get('notAfter'), now) if status.get('notAfter') else 'none (never issued)'}"
             + (f" renewalTime={status['renewalTime']}" if status.get("renewalTime") else ""),
             f"  issuer={issuer_kind}/{one_line(ref.get('name', '?'), 120)} writes Secret "
             f"{one_line(spec.get('secretName', '?'), 120)} (named, never read)"
             + (f" dnsNames={one_line(','.join(spec['dnsNames']), 200)}" if spec.get("dnsNames") else "")]
    parse_renewal = parse_time(status.get("renewalTime"))
    if parse_renewal and parse_renewal <= now and status.get("notAfter"):
        lines.append("  renewal was due and has not happened")
    if status.get("failedIssuanceAttempts"):
        lines.append(f"  failedIssuanceAttempts={status['failedIssuanceAttempts']}"
                     + (f" lastFailureTime={status['lastFailureTime']}" if status.get("lastFailureTime") else ""))
    issuer = (context.get("issuers") or {}).get((issuer_kind, ref.get("name")))
    if isinstance(issuer, dict):
        lines.append(f"  its {issuer_kind} {ref.get('name')}: {_ready_text(issuer)}")
    elif isinstance(issuer, str):
        lines.append(f"  its {issuer_kind} {ref.get('name')}: {one_line(issuer, 200)}")
    return lines


def issuer_lines(obj, context):
    spec = obj.get("spec") or {}
    kind = next((t for t in ISSUER_TYPES if t in spec), "unknown")
    detail = spec.get(kind) or {}
    where = ""
    if kind == "acme":
        where = f" server={one_line(detail.get('server', '?'), 160)}"
        solvers = [",".join(sorted(s)) for s in detail.get("solvers") or [] if isinstance(s, dict)]
        where += f" solvers={one_line(';'.join(solvers) or 'none', 120)}"
    elif kind == "ca":
        where = f" keypair in Secret {one_line(detail.get('secretName', '?'), 120)} (named, never read)"
    elif kind == "vault":
        where = f" server={one_line(detail.get('server', '?'), 160)} path={one_line(detail.get('path', '?'), 120)}"
    return [f"  type={kind}{where}"]
