"""A small JSON Schema validator, and the copy of a schema that strict tools accept.

`validate(instance, schema)` checks the subset this project uses (type, properties, required,
additionalProperties, items, enum, const, minLength/maxLength, minItems/maxItems,
minimum/maximum, pattern, anyOf, allOf) and returns field-level messages a model can act on:

    evidence[0].quote: is required
    severity: must be one of "critical", "high", "medium", "low", "none" (got "urgent")

It never raises: hostile instances (deep nesting, wrong types, huge strings) become messages.
description, title, format and unknown keywords are ignored.

`strict_tool_schema(schema)` returns a stripped deep copy for a tool sent with `strict: true`.
The Messages API accepts only type, enum, const, anyOf, allOf, description, title, properties,
required, additionalProperties (false, on every object), items, minItems 0 or 1 and a few string
formats; everything else is dropped there (and named in the description, as the official SDK
does, so the model still reads it) and stays enforced by `validate` in the loop.
"""

import copy
import json
import math
import re

MAX_DEPTH = 64
MAX_ERRORS = 20

STRICT_KEYS = frozenset({"type", "enum", "const", "anyOf", "allOf", "description", "title",
                         "properties", "required", "additionalProperties", "items",
                         "minItems", "format"})
STRICT_FORMATS = frozenset({"date-time", "time", "date", "duration", "email", "hostname",
                            "uri", "ipv4", "ipv6", "uuid"})
_IGNORED = frozenset({"$schema", "$id", "$comment", "default", "examples", "readOnly",
                      "writeOnly", "deprecated"})


def validate(instance, schema, *, max_errors=MAX_ERRORS) -> list[str]:
    """Return field-level error messages (empty when `instance` satisfies `schema`)."""
    errors: list[str] = []
    try:
        _check(instance, schema, "", errors, 0)
    except Exception as exc:  # a validator bug must not end a run; say so instead
        errors.append(f"(root): could not be validated ({type(exc).__name__})")
    if len(errors) > max_errors:
        extra = len(errors) - max_errors
        errors = errors[:max_errors] + [f"... and {extra} more error(s)"]
    return errors


def strict_tool_schema(schema, *, describe_dropped=True) -> dict:
    """Deep copy of `schema` reduced to what strict tool use accepts."""
    return _strip(copy.deepcopy(schema), describe_dropped)


# --- validation -------------------------------------------------------------------------------

def _where(path: str) -> str:
    return path or "(root)"


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _show(value, limit=60) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, default=repr)
    except (TypeError, ValueError, RecursionError):
        text = repr(type(value).__name__)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _type_name(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if math.isfinite(value) and value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _is_type(value, name: str) -> bool:
    actual = _type_name(value)
    if name == "number":
        return actual in ("integer", "number") and math.isfinite(value)
    return actual == name


def _check(value, schema, path, errors, depth):
    if schema is True or schema is None:
        return
    if schema is False:
        errors.append(f"{_where(path)}: is not allowed")
        return
    if not isinstance(schema, dict):
        return
    if depth > MAX_DEPTH:
        errors.append(f"{_where(path)}: nested too deeply (more than {MAX_DEPTH} levels)")
        return
    if not _check_type(value, schema, path, errors):
        return  # further keywords would only repeat the type error
    _check_values(value, schema, path, errors)
    if isinstance(value, str):
        _check_string(value, schema, path, errors)
    elif _type_name(value) in ("integer", "number"):
        _check_number(value, schema, path, errors)
    elif isinstance(value, (list, tuple)):
        _check_array(value, schema, path, errors, depth)
    elif isinstance(value, dict):
        _check_object(value, schema, path, errors, depth)
    _check_combinators(value, schema, path, errors, depth)


def _check_type(value, schema, path, errors) -> bool:
    wanted = schema.get("type")
    if isinstance(wanted, str):
        names = [wanted]
    elif isinstance(wanted, list):
        names = [name for name in wanted if isinstance(name, str)]
    else:
        return True
    if not names or any(_is_type(value, n) for n in names):
        return True
    got = _type_name(value)
    if got == "number" and not math.isfinite(value):
        got = "non-finite number"
    need = names[0] if len(names) == 1 else "one of " + ", ".join(names)
    errors.append(f"{_where(path)}: must be {need} (got {got})")
    return False


def _same(a, b) -> bool:
    # JSON equality: true is not 1, 1.0 is 1
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


def _check_values(value, schema, path, errors):
    enum = schema.get("enum")
    if isinstance(enum, list) and not any(_same(value, option) for option in enum):
        options = ", ".join(_show(option) for option in enum[:12])
        errors.append(f"{_where(path)}: must be one of {options} (got {_show(value)})")
    if "const" in schema and not _same(value, schema["const"]):
        errors.append(f"{_where(path)}: must be {_show(schema['const'])} (got {_show(value)})")


def _check_string(value, schema, path, errors):
    low, high = schema.get("minLength"), schema.get("maxLength")
    if isinstance(low, int) and len(value) < low:
        errors.append(f"{_where(path)}: must be at least {low} character(s) long"
                      f" (got {len(value)})")
    if isinstance(high, int) and len(value) > high:
        errors.append(f"{_where(path)}: must be at most {high} characters long"
                      f" (got {len(value)})")
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        try:
            matched = re.search(_python_pattern(pattern), value) is not None
        except re.error:
            errors.append(f"{_where(path)}: schema has an invalid pattern {_show(pattern)}")
            return
        if not matched:
            errors.append(f"{_where(path)}: must match pattern {_show(pattern)}"
                          f" (got {_show(value)})")


def _python_pattern(pattern):
    """JSON Schema patterns are ECMA-262: `$` is the end of input, where Python's `$` also
    matches before a final newline ("prod\\n" would pass ^[a-z]+$). Use \\Z outside classes."""
    out, escaped, in_class = [], False, False
    for ch in pattern:
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == "[":
            in_class = True
        elif ch == "]":
            in_class = False
        elif ch == "$" and not in_class:
            ch = r"\Z"
        out.append(ch)
    return "".join(out)


def _check_number(value, schema, path, errors):
    low, high = schema.get("minimum"), schema.get("maximum")
    if _type_name(low) in ("integer", "number") and value < low:
        errors.append(f"{_where(path)}: must be >= {low} (got {_show(value)})")
    if _type_name(high) in ("integer", "number") and value > high:
        errors.append(f"{_where(path)}: must be <= {high} (got {_show(value)})")


def _check_array(value, schema, path, errors, depth):
    low, high = schema.get("minItems"), schema.get("maxItems")
    if isinstance(low, int) and len(value) < low:
        errors.append(f"{_where(path)}: must have at least {low} item(s) (got {len(value)})")
    if isinstance(high, int) and len(value) > high:
        errors.append(f"{_where(path)}: must have at most {high} item(s) (got {len(value)})")
    items = schema.get("items")
    if isinstance(items, (dict, bool)):
        for index, item in enumerate(value):
            _check(item, items, f"{path}[{index}]", errors, depth + 1)
            if len(errors) > MAX_ERRORS * 2:
                return


def _check_object(value, schema, path, errors, depth):
    props = schema.get("properties")
    props = props if isinstance(props, dict) else {}
    required = schema.get("required")
    for name in required if isinstance(required, list) else []:
        if isinstance(name, str) and name not in value:
            errors.append(f"{_join(path, name)}: is required")
    extra = schema.get("additionalProperties", True)
    for key, item in value.items():
        key = str(key)
        if key in props:
            _check(item, props[key], _join(path, key), errors, depth + 1)
        elif extra is False:
            allowed = ", ".join(sorted(props)) or "none"
            shown = key if len(key) <= 40 else key[:37] + "..."
            errors.append(f"{_join(path, shown)}: is not an allowed property"
                          f" (allowed: {allowed})")
        elif isinstance(extra, dict):
            _check(item, extra, _join(path, key), errors, depth + 1)
        if len(errors) > MAX_ERRORS * 2:
            return


def _check_combinators(value, schema, path, errors, depth):
    for sub in schema.get("allOf") or []:
        _check(value, sub, path, errors, depth + 1)
    options = schema.get("anyOf")
    if not isinstance(options, list) or not options:
        return
    attempts = []
    for sub in options:
        found: list[str] = []
        _check(value, sub, path, found, depth + 1)
        if not found:
            return
        attempts.append(found)
    closest = min(attempts, key=len)
    errors.append(f"{_where(path)}: must match one of {len(options)} allowed forms;"
                  f" the closest fails with:")
    errors.extend("  " + message for message in closest)


# --- strict copy ------------------------------------------------------------------------------

def _strip(schema, describe):
    if not isinstance(schema, dict):
        return schema
    dropped = {}
    for key in list(schema):
        if key in STRICT_KEYS:
            continue
        value = schema.pop(key)
        if key not in _IGNORED and not key.startswith("x-"):
            dropped[key] = value
    if "format" in schema and schema["format"] not in STRICT_FORMATS:
        dropped["format"] = schema.pop("format")
    if "minItems" in schema and schema["minItems"] not in (0, 1):
        dropped["minItems"] = schema["minItems"]
        schema["minItems"] = 1  # a weaker bound the API accepts; the full one is checked locally
    if isinstance(schema.get("properties"), dict):
        schema["properties"] = {name: _strip(sub, describe)
                                for name, sub in schema["properties"].items()}
    if isinstance(schema.get("items"), dict):
        schema["items"] = _strip(schema["items"], describe)
    for key in ("anyOf", "allOf"):
        if isinstance(schema.get(key), list):
            schema[key] = [_strip(sub, describe) for sub in schema[key]]
    if _is_object_schema(schema):
        if schema.get("additionalProperties") not in (None, False):
            dropped["additionalProperties"] = "restricted"
        schema["additionalProperties"] = False
        schema.setdefault("properties", {})
    elif "additionalProperties" in schema:
        schema.pop("additionalProperties")
    if describe and dropped:
        note = "; ".join(f"{key}: {_show(value, 80)}" for key, value in dropped.items())
        base = schema.get("description")
        schema["description"] = (f"{base}\n\n" if base else "") + f"({note})"
    return schema


def _is_object_schema(schema) -> bool:
    kind = schema.get("type")
    return kind == "object" or (isinstance(kind, list) and "object" in kind) \
        or (kind is None and "properties" in schema)
