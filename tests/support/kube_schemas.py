"""Kubernetes objects checked against the official OpenAPI schemas, strictly (no unknown fields).

    problems(obj)                  -> ["status.nodeInfo: 'machineID' is a required property", ...]
    check_all(objects, verdicts)   -> [(object, problems)] for each object that fails

The schemas are the ones kubernetes-validate ships (a test-only dependency; nothing is
downloaded), read from its wheel where `make test` keeps it (below), for the version the
simulator claims (fixtures/kube_sim/http.py: 1.32), in their strict form (additionalProperties
false). One validator is built per kind, the way kubernetes_validate.validate() builds it on
every call, and kept: that function reads the 1.3 MB definitions file each time, some 12 ms per
object, where a kept validator takes about 1 ms.

check_all() validates one object of each distinct shape (its keys, list items and the JSON type
of each value; apiVersion and kind by value): these schemas constrain nothing else (no pattern,
length, range or enum but apiVersion and kind; oneOf only between types), so two objects of the
same shape pass or fail alike. tests/sim/test_schemas.py proves that of the shipped schemas, so a
new kubernetes-validate that adds such a keyword fails there instead of being trusted.

`make test` does not install kubernetes-validate: its wheel holds 17,000 schema files (108 MB,
every Kubernetes version from 1.25 on, each in four forms) of which these tests read a dozen, and
writing them all out took 4 to 20 s of the kernel's time on a fresh clone. pip downloads the
pinned wheel into .venv/schemas, and `python -m tests.support.kube_schemas unpack` (the Makefile
runs it) writes beside it the package's code and metadata and the one directory the checks read,
the strict schemas of the simulator's version (650 files): UNPACKED. The first call here that
needs the package puts that directory on sys.path; not at import (a collection imports this
module in every worker), and not through a .pth file (every interpreter of the venv would look
there at each import that misses). To the package, the version unpacked is the only one there
is (its all_versions() lists the directories); these tests ask for no other. Importing the wheel
itself as a zip archive worked too, but each importlib_resources.files() of it read the
archive's index of 17,000 names again (about 0.12 s of CPU each, four in each call of
kubernetes_validate.validate()): the schema tests took 2.5 s of CPU that way and 1.3 s unpacked
(pytest -n 3 tests/sim/test_schemas.py tests/project/test_outputs_schemas.py, twice each). An
installed kubernetes_validate, where there is one, comes first.
"""

import functools
import importlib
import json
import re
import shutil
import sys
import zipfile
from pathlib import Path

from fixtures.kube_sim.http import VERSION as SIM_VERSION

ROOT = Path(__file__).resolve().parents[2]
WHEELS = ROOT / ".venv" / "schemas"
UNPACKED = WHEELS / "unpacked"
VERSION = f"{SIM_VERSION['major']}.{SIM_VERSION['minor']}"
STRICT = f"v{VERSION}.0-local-strict"   # the directory of the package's schemas these tests read
BY_VALUE = ("apiVersion", "kind")  # the keys whose values the schemas constrain (enum)


def unpack(wheels=WHEELS, into=UNPACKED):
    """Write the package and its STRICT schemas out of the one wheel in `wheels` (see the
    module's docstring); the number of files written."""
    found = list(Path(wheels).glob("kubernetes_validate-*.whl"))
    if len(found) != 1:
        raise SystemExit(f"{wheels} holds {len(found)} kubernetes_validate wheels, not one:"
                         " run `make test-deps`")
    schemas = "kubernetes_validate/kubernetes-json-schema/"
    with zipfile.ZipFile(found[0]) as wheel:
        names = [name for name in wheel.namelist()
                 if not name.startswith(schemas) or name.startswith(f"{schemas}{STRICT}/")]
        partial = Path(f"{into}.partial")
        shutil.rmtree(partial, ignore_errors=True)   # what a run cut short left
        wheel.extractall(partial, names)
    partial.rename(into)   # whole or not at all: a run cut short leaves only the .partial
    return len(names)


@functools.cache
def kubernetes_validate():
    """The kubernetes_validate package: installed, or else the one UNPACKED from its wheel."""
    try:
        return importlib.import_module("kubernetes_validate")
    except ImportError:
        if not (UNPACKED / "kubernetes_validate").is_dir():
            raise ImportError(f"kubernetes_validate is neither installed nor unpacked in"
                              f" {UNPACKED}: run `make test-deps`") from None
        sys.path.append(str(UNPACKED))
        return importlib.import_module("kubernetes_validate")


@functools.cache
def schema_dir():
    """The package's directory of the simulator's version's schemas, strict form."""
    import importlib_resources
    return importlib_resources.files(kubernetes_validate()) / "kubernetes-json-schema" / STRICT


@functools.cache
def definitions():
    """The shared definitions every kind's schema refers to."""
    return json.loads((schema_dir() / "_definitions.json").read_text(encoding="utf-8"))


def schema_file(api_version, kind):
    """kubernetes-validate's file for a kind: apps/v1 Deployment -> deployment-apps-v1.json."""
    group = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    return schema_dir() / f"{kind.lower()}-{group}.json"


@functools.cache
def validator(api_version, kind):
    """A Draft 2020-12 validator for one kind; LookupError when no schema has that kind."""
    path = schema_file(api_version, kind)
    if not path.is_file():
        raise LookupError(f"no Kubernetes {VERSION} schema for {api_version} {kind}")
    import jsonschema  # the first check pays for these, not a collection's import
    from referencing import Registry, Resource
    schema = json.loads(path.read_text(encoding="utf-8"))
    registry = Resource.from_contents(definitions()) @ (Resource.from_contents(schema) @ Registry())
    return jsonschema.Draft202012Validator(schema, registry=registry)


def problems(obj):
    """What the schema says is wrong with one object ([] when it is valid)."""
    try:
        check = validator(obj.get("apiVersion", ""), obj.get("kind", ""))
    except LookupError as exc:
        return [str(exc)]
    found = sorted(check.iter_errors(obj), key=lambda e: list(map(str, e.absolute_path)))
    return [f"{'.'.join(map(str, e.absolute_path)) or '(object)'}: {e.message}" for e in found]


def shape(value, key=None):
    """What validation depends on: keys, items and JSON types (apiVersion and kind by value)."""
    if isinstance(value, dict):
        return frozenset((k, shape(v, k)) for k, v in value.items())
    if isinstance(value, list):
        return ("list", frozenset(shape(v) for v in value))
    if key in BY_VALUE:
        return ("value", value)
    if isinstance(value, float) and value.is_integer():
        return "float-integer"  # JSON Schema counts 2.0 as an integer
    return type(value).__name__


def check_all(objects, verdicts=None):
    """[(object, problems)] for every failing object; one validation per distinct shape
    (`verdicts`, {shape: problems}, may be shared between calls)."""
    verdicts, failing = {} if verdicts is None else verdicts, []
    for obj in objects:
        key = shape(obj)
        if key not in verdicts:
            verdicts[key] = problems(obj)
        if verdicts[key]:
            failing.append((obj, verdicts[key]))
    return failing


def describe(failing, limit=10):
    """A readable report of check_all()'s result."""
    lines = []
    for obj, found in failing[:limit]:
        md = obj.get("metadata", {})
        where = "/".join(x for x in (md.get("namespace"), md.get("name")) if x)
        lines.append(f"{obj.get('kind')} {where}: " + "; ".join(found[:3]))
    if len(failing) > limit:
        lines.append(f"... and {len(failing) - limit} more")
    return "\n".join(lines)


if __name__ == "__main__":
    if sys.argv[1:] != ["unpack"]:
        raise SystemExit("usage: python -m tests.support.kube_schemas unpack")
    unpack()
