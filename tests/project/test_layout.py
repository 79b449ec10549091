"""The layout is the architecture: the loop core's top level stays small, and no module grows
past the size where it should have been split (STYLE.md)."""

import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
MAX_TOP_LEVEL = 18          # entry points, loop, turns, policy, scope, prompts, report, ...
MAX_MODULE_LINES = 400


def top_level_modules(folder):
    return sorted(p.name for p in folder.glob("*.py") if p.name != "__init__.py")


def test_the_loop_core_keeps_at_most_18_top_level_modules():
    modules = top_level_modules(ROOT / "triage_agent")
    assert len(modules) <= MAX_TOP_LEVEL, modules


def test_the_count_sees_a_module_added_at_the_top(tmp_path):
    for i in range(MAX_TOP_LEVEL + 1):
        (tmp_path / f"m{i}.py").write_text("")
    (tmp_path / "__init__.py").write_text("")
    assert len(top_level_modules(tmp_path)) == MAX_TOP_LEVEL + 1


def test_no_module_of_the_runtime_passes_400_lines():
    long = [f"{p.relative_to(ROOT)}: {n}" for package in ("triage_agent", "mcp_kubectl_server")
            for p in (ROOT / package).rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES]
    assert not long, long
