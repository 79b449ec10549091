"""Value grammar for everything a model may pass to kubectl: DNS-1123 names and label selectors.

Each check returns an error message (a sentence the model can act on) or None. Nothing that
fails here ever reaches kubectl; nothing that passes can start with '-' or contain whitespace
outside a selector's `in (...)` list, so no value can be read as a kubectl flag. Matching is
whole-string (`fullmatch`): Python's `$` also matches before a final newline.
"""

import re

DNS1123_LABEL = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
DNS1123_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
SELECTOR_PATTERN = r"^[A-Za-z0-9!][A-Za-z0-9_./=!,() -]*$"
SELECTOR_MAX = 512

_LABEL_RE = re.compile(DNS1123_LABEL)
_SUBDOMAIN_RE = re.compile(DNS1123_SUBDOMAIN)

# Label selector grammar (k8s.io/apimachinery labels.Parse), one term at a time.
_NAME = r"[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_KEY = r"(?:[a-z0-9](?:[-a-z0-9.]{0,251}[a-z0-9])?/)?" + _NAME
_VALUE = r"(?:" + _NAME + r")?"
_TERM_RES = [
    re.compile(r"^!?" + _KEY + r"$"),
    re.compile(r"^" + _KEY + r"\s*(?:==|=|!=)\s*" + _VALUE + r"$"),
    re.compile(r"^" + _KEY + r"\s+(?:in|notin)\s+\(\s*" + _VALUE + r"(?:\s*,\s*" + _VALUE + r")*\s*\)$"),
]


def _shown(value, limit=60):
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "...(" + str(len(text)) + " chars)"


def check_label(field, value):
    """A DNS-1123 label: namespaces and container names."""
    if not isinstance(value, str):
        return f"{field}: must be a string, got {type(value).__name__}"
    if not _LABEL_RE.fullmatch(value):
        return (f"{field}: {_shown(value)} is not a valid name: use lowercase letters, digits and '-',"
                f" starting and ending with a letter or digit, at most 63 characters")
    return None


def check_subdomain(field, value):
    """A DNS-1123 subdomain: pod, workload and node names."""
    if not isinstance(value, str):
        return f"{field}: must be a string, got {type(value).__name__}"
    if len(value) > 253 or not _SUBDOMAIN_RE.fullmatch(value):
        return (f"{field}: {_shown(value)} is not a valid name: use the exact name as a listing tool"
                f" printed it (lowercase letters, digits, '-' and '.', at most 253 characters)")
    return None


def check_object_name(field, value):
    """A DNS-1123 subdomain naming an object other than a pod (ConfigMap, Service, ...)."""
    problem = check_subdomain(field, value)
    if problem and isinstance(value, str):
        return (f"{field}: {_shown(value)} is not a valid object name: lowercase letters, digits,"
                f" '-' and '.', at most 253 characters")
    return problem


def _split_terms(selector):
    """Split on commas outside parentheses."""
    terms, depth, start = [], 0, 0
    for i, ch in enumerate(selector):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            terms.append(selector[start:i])
            start = i + 1
    terms.append(selector[start:])
    return [t.strip() for t in terms]


def check_selector(field, value):
    """A label selector: `app=web`, `tier!=db,env in (prod,staging)`, `!canary`."""
    if not isinstance(value, str):
        return f"{field}: must be a string, got {type(value).__name__}"
    hint = f"{field}: {_shown(value)} is not a label selector; write it like app=checkout or app=web,tier!=db"
    if not value or len(value) > SELECTOR_MAX or not re.fullmatch(SELECTOR_PATTERN, value):
        return hint
    for term in _split_terms(value):
        if not any(r.fullmatch(term) for r in _TERM_RES):
            return hint
    return None
