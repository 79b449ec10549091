"""The runtime packages import nothing outside the Python standard library, and inside them the
imports run the way each package's map (its __init__.py) says: downward, never up a layer."""

import ast
import importlib
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.server_support import ServerProcess

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("triage_agent", "mcp_kubectl_server")
ALLOWED = set(sys.stdlib_module_names) | set(PACKAGES)


def _modules():
    for package in PACKAGES:
        yield package
        for info in pkgutil.walk_packages([str(ROOT / package)], prefix=package + "."):
            yield info.name


def _statements(node):
    """Every statement under `node`, at any depth (an import is a statement, so the walk need
    not enter expressions, which are most of a module's nodes)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)):
            if isinstance(child, ast.stmt):
                yield child
            yield from _statements(child)


def _imported_names(path):
    """(line, module) of each absolute import; `from pkg import name` of one of PACKAGES gives
    pkg.name when name is a module of pkg."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in _statements(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                yield node.lineno, (f"{node.module}.{alias.name}" if node.module in PACKAGES and (
                    (ROOT / node.module / alias.name).is_dir()
                    or (ROOT / node.module / f"{alias.name}.py").is_file()) else node.module)


@pytest.mark.parametrize("package", PACKAGES)
def test_source_imports_only_stdlib(package):
    bad = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for lineno, name in _imported_names(path):
            if name.split(".")[0] not in ALLOWED:
                bad.append(f"{path.relative_to(ROOT)}:{lineno}: {name}")
    assert bad == []


def test_every_module_resolves_inside_stdlib():
    """Import each module in a fresh interpreter and list every module that got loaded."""
    names = sorted(_modules())
    code = (
        "import importlib, sys\n"
        "before = set(sys.modules)\n"  # whatever site start-up loaded is not ours
        f"for n in {names!r}: importlib.import_module(n)\n"
        "print('\\n'.join(sorted(set(sys.modules) - before)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    outside = [n for n in out.stdout.split() if n.split(".")[0] not in ALLOWED
               and not n.startswith("_")]
    assert outside == []


def test_checker_catches_a_third_party_import(tmp_path):
    """The AST check above is not vacuous: it flags a non-stdlib import."""
    sample = tmp_path / "m.py"
    sample.write_text("import json\nimport requests\nfrom yaml import safe_load\n"
                      "class C:\n    def f(self):\n        try:\n            import attr\n"
                      "        except ImportError:\n            from toml import loads\n"
                      "        match self:\n            case 1:\n                import rich\n"
                      "        with open('x') as f:\n            if f:\n                import six\n")
    names = [n for _, n in _imported_names(sample) if n.split(".")[0] not in ALLOWED]
    assert names == ["requests", "yaml", "attr", "toml", "rich", "six"]


def test_the_server_never_imports_the_agent_and_the_agent_only_its_redactor():
    """One redaction implementation, shared one way: the server stays importable on its own."""
    server_imports = [n for path in sorted((ROOT / "mcp_kubectl_server").rglob("*.py"))
                      for _, n in _imported_names(path)]
    agent_imports = {n for path in sorted((ROOT / "triage_agent").rglob("*.py"))
                     for _, n in _imported_names(path) if n.startswith("mcp_kubectl_server")}
    assert [n for n in server_imports if n.startswith("triage_agent")] == []
    assert agent_imports == {"mcp_kubectl_server.redact"}


# The layers of each package, from the top; a module imports from its own layer or those below.
LAYERS = {
    "triage_agent": (
        {"__main__", "cli", "options", "evaluate", "serve", "chat", "evals", "followup"},
                                                 # entry points, services, follow-ups, chat
        {"loop", "turns", "policy", "scope", "prompts", "report", "schema", "actions", "ask",
         "context", "outcome", "preflight", "status", "verify"},         # the loop core
        {"model", "mcp", "telemetry"},                                   # the wire and records
        {"", "seams", "terminal", "lines"}),                             # leaves ("": __init__)
    "mcp_kubectl_server": (
        {"__main__", "server"}, {"tools"}, {"read", "digests"}, {"", "redact", "validate"}),
}
SCREEN = {"ask", "status"}   # what a person sees and answers: the loop core knows neither
PURE = {"digests": {"read"}}  # digests are pure functions of objects: they never read


def _part(module):
    """(package, its top-level part: a module or subpackage name, "" for the package itself)."""
    package, _, rest = module.partition(".")
    return package, rest.split(".")[0]


def _layer(module):
    package, part = _part(module)
    return next((i for i, layer in enumerate(LAYERS[package]) if part in layer), None)


def _project_imports():
    """{module: {project module it imports}}."""
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            found[module] = {n for _, n in _imported_names(path) if n.split(".")[0] in PACKAGES}
    return found


def _against_the_layers(imports):
    """(module, what it imports) for every import that goes up a layer, out of the loop core to
    the screen, or from a pure part to a reading one."""
    bad = []
    for module, names in imports.items():
        for name in names:
            (package, part), (other, target) = _part(module), _part(name)
            if package != other or part == target:
                continue   # across packages: test_the_server_never_imports_the_agent...
            if (_layer(name) < _layer(module)
                    or (package == "triage_agent" and _layer(module) == 1 and part not in SCREEN
                        and target in SCREEN)
                    or target in PURE.get(part, ())):
                bad.append((module, name))
    return sorted(bad)


def test_imports_run_down_the_layers_of_each_package():
    imports = _project_imports()
    named = set(imports) | {name for names in imports.values() for name in names}
    assert [m for m in sorted(named) if _layer(m) is None] == []   # a new module gets its layer
    assert _against_the_layers(imports) == []
    # the control: each rule sees a breach
    assert _against_the_layers({
        "triage_agent.model.messages": {"triage_agent.cli"},
        "triage_agent.loop": {"triage_agent.status", "triage_agent.turns"},
        "mcp_kubectl_server.digests.pods": {"mcp_kubectl_server.read.reader"},
        "mcp_kubectl_server.read.reader": {"mcp_kubectl_server.tools.pods",
                                           "mcp_kubectl_server.digests.certs"},
    }) == [("mcp_kubectl_server.digests.pods", "mcp_kubectl_server.read.reader"),
           ("mcp_kubectl_server.read.reader", "mcp_kubectl_server.tools.pods"),
           ("triage_agent.loop", "triage_agent.status"),
           ("triage_agent.model.messages", "triage_agent.cli")]


def test_the_loop_and_a_replayed_run_load_no_http_client():
    """The loop knows no HTTP service: it and the replay model import the model seam's error
    (triage_agent/model/errors.py), not the client; the CLI loads the client for a live run only.
    The same check over the client itself is the control that it sees an import."""
    code = ("import importlib, sys\n"
            "for n in sys.argv[1:]: importlib.import_module(n)\n"
            "print(' '.join(n for n in ('http.client', 'http.server', 'ssl', 'urllib.request')"
            " if n in sys.modules))\n")
    quiet = [sys.executable, "-c", code, "triage_agent.loop", "triage_agent.model.replay",
             "triage_agent.cli", "triage_agent.telemetry.otlp"]
    client = [sys.executable, "-c", code, "triage_agent.model.messages"]
    loaded = [subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=60)
              for argv in (quiet, client)]
    assert [(out.returncode, out.stdout.split()) for out in loaded] == [
        (0, []), (0, ["http.client", "ssl", "urllib.request"])]


def test_what_starts_a_run_loads_nothing_the_start_can_do_without():
    """The server launches its kubectl proxy right after its entry point loads, so that entry point
    loads no http.client (email behind it) and no redactor (both come at the first read); the CLI
    spawns the server after its options, so those load no action gate (dataclasses, the
    redactor). The same listing after loading the reader and the gate is the control."""
    code = ("import importlib, sys\n"
            "for n in sys.argv[1:]: importlib.import_module(n)\n"
            "print(' '.join(n for n in ('http.client', 'mcp_kubectl_server.redact', 'dataclasses',"
            " 'triage_agent.actions.gate') if n in sys.modules))\n")
    runs = [["mcp_kubectl_server.__main__"], ["triage_agent.cli"],
            ["mcp_kubectl_server.read.unixhttp", "triage_agent.actions.gate"]]
    loaded = [subprocess.run([sys.executable, "-c", code, *names], cwd=ROOT, capture_output=True, text=True,
                             timeout=60) for names in runs]
    assert [(out.returncode, out.stdout.split()) for out in loaded] == [
        (0, []), (0, []), (0, ["http.client", "mcp_kubectl_server.redact", "dataclasses",
                               "triage_agent.actions.gate"])]


def test_a_server_start_loads_no_dataclasses_fractions_or_traceback():
    """A real server start (initialize, tools/list, end of input) imports none of the modules
    that docs/development.md counts out of its CPU (dataclasses with inspect, fractions,
    traceback); the same listing of its imports sees json, the control that it sees any."""
    server = ServerProcess("--allow-namespaces", "prod", "--kubeconfig", str(ROOT / "nonexistent"),
                           env=dict(os.environ, PYTHONPROFILEIMPORTTIME="1"), process=True)
    server.initialize()
    assert server.request("tools/list")["result"]["tools"]
    assert server.close() == 0
    loaded = {line.rsplit("|", 1)[1].strip() for line in server.stderr_text().splitlines()
              if line.startswith("import time:") and "|" in line}
    assert "json" in loaded and "mcp_kubectl_server.server" in loaded
    assert loaded & {"dataclasses", "inspect", "fractions", "traceback"} == set()
