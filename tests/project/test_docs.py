"""The documentation: README.md is the front door (at most 250 lines, the two commands near its
top, every tool of the server in its list, every docs/ page in its index); every relative link
and anchor in README.md and docs/ resolves; and the generated reference pages, docs/tools.md and
docs/flags.md, are what the code renders now (`make docs` rewrites them), with a check that
fails on a stale page."""

import argparse
import io
import re

from mcp_kubectl_server.tools import registry
from tests.support import docs_gen

ROOT = docs_gen.ROOT
README = ROOT / "README.md"
DOCS = ROOT / "docs"
MAKE_DOCS = "run `make docs` and commit docs/tools.md and docs/flags.md"


def readme_section(heading):
    text = README.read_text(encoding="utf-8")
    assert f"\n{heading}\n" in text, f"README.md has no section {heading!r}"
    return text.split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0]


def test_the_readme_is_a_front_door():
    text = README.read_text(encoding="utf-8")
    assert text.count("\n") <= 250, "README.md is the front door: move the manual into docs/"
    assert "make demo" in text[:3000] and "make test" in text[:3000]


def test_the_readme_lists_every_tool_of_the_server_and_no_other():
    listed = re.findall(r"^\| `(\w+)` \|", readme_section("## The tools"), re.M)
    assert sorted(listed) == sorted(registry.load(metrics_tools=True).tools), \
        "README.md's tool list: one row per tool of the server (docs/tools.md has the rest)"


def test_the_readme_indexes_every_docs_page():
    linked = re.findall(r"\]\(docs/([\w.-]+\.md)\)", readme_section("## Documentation"))
    assert sorted(linked) == sorted(p.name for p in DOCS.glob("*.md"))


def slug(heading):
    """The anchor GitHub gives a heading: markup dropped, lower case, punctuation dropped,
    spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "").lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(text):
    seen, out = {}, set()
    for heading in re.findall(r"^#{1,6} (.+?)\s*$", text, re.M):
        base = slug(heading)
        out.add(base if base not in seen else f"{base}-{seen[base]}")
        seen[base] = seen.get(base, 0) + 1
    return out


def prose(path):
    """A page without its fenced code blocks, where brackets are not links."""
    return re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.M | re.S)


def test_slug_follows_github():
    assert slug("Alerts in: `--alert` and `serve`") == "alerts-in---alert-and-serve"
    assert slug("The server's own options, and `--check`") == "the-servers-own-options-and---check"
    assert anchors("# A\n## A\n## get_pods\n") == {"a", "a-1", "get_pods"}


def broken_links(pages, root):
    """Each relative link of `pages` whose file or heading does not exist, as text."""
    broken = []
    for page in pages:
        for target in re.findall(r"\]\(([^)\s]+)\)", prose(page)):
            if re.match(r"[a-z]+:", target):
                continue  # http(s), mailto: not ours to check
            file_part, _, anchor = target.partition("#")
            linked = (page.parent / file_part).resolve() if file_part else page
            where = f"{page.relative_to(root)}: {target}"
            if not linked.exists():
                broken.append(f"{where} (no such file)")
            elif anchor and linked.suffix == ".md" and \
                    anchor not in anchors(linked.read_text(encoding="utf-8")):
                broken.append(f"{where} (no such heading)")
    return broken


def test_every_relative_link_and_anchor_resolves():
    assert broken_links([README, *sorted(DOCS.glob("*.md"))], ROOT) == []


def test_a_broken_link_or_anchor_is_found(tmp_path):
    (tmp_path / "a.md").write_text("# A\n## The `x` flag\n[ok](b.md#b) [ok](#the-x-flag) "
                                   "[web](https://example.com/none)\n"
                                   "[gone](c.md) [moved](b.md#old) [self](#nope)\n"
                                   "```\n[in code](not-a-link.md)\n```\n")
    (tmp_path / "b.md").write_text("# B\n")
    assert broken_links([tmp_path / "a.md"], tmp_path) == [
        "a.md: c.md (no such file)", "a.md: b.md#old (no such heading)",
        "a.md: #nope (no such heading)"]


def test_the_generated_pages_are_current():
    assert docs_gen.stale_pages() == [], MAKE_DOCS


def test_the_check_fails_on_a_stale_page_and_make_docs_mends_it(tmp_path):
    out = io.StringIO()
    assert docs_gen.main(["--check", "--root", str(tmp_path)], stdout=out) == 1  # none written
    assert out.getvalue().count(" is stale: run `make docs`") == len(docs_gen.PAGES) == 2
    assert docs_gen.main(["--root", str(tmp_path)], stdout=io.StringIO()) == 0
    assert docs_gen.main(["--check", "--root", str(tmp_path)], stdout=io.StringIO()) == 0
    tools = tmp_path / "docs" / "tools.md"
    tools.write_text(tools.read_text().split("\n## describe_node")[0] + "\n")  # a tool added since
    out = io.StringIO()
    assert docs_gen.main(["--check", "--root", str(tmp_path)], stdout=out) == 1
    assert out.getvalue() == "docs/tools.md is stale: run `make docs` and commit the result\n"
    assert docs_gen.main(["--root", str(tmp_path)], stdout=io.StringIO()) == 0
    assert docs_gen.stale_pages(tmp_path) == []


def test_the_tools_page_has_every_tool_argument_and_annotation():
    page = docs_gen.tools_page()
    for tool in registry.load(metrics_tools=True).tools.values():
        section = page.split(f"\n## {tool.name}\n", 1)[1].split("\n## ", 1)[0]
        assert tool.description in section
        assert "read-only" in section and "`readOnlyHint: true`" in section
        for name in tool.properties:
            row = re.search(rf"^\| `{name}` \| (.*)$", section, re.M)
            assert row, (tool.name, name)
            assert ("required" in row.group(1)) == (name in tool.required)


def test_the_tools_page_says_a_default_and_an_unsafe_annotation():
    definition = {"name": "get_things", "title": "Things", "description": "Lists things.",
                  "annotations": {"readOnlyHint": False},
                  "inputSchema": {"type": "object", "required": ["namespace"], "properties": {
                      "namespace": {"type": "string", "maxLength": 63},
                      "tail": {"type": "integer", "minimum": 1, "maximum": 9, "default": 5},
                      "kind": {"type": "string", "enum": ["A", "B|C"]}}}}
    section = "\n".join(docs_gen.tool_section(definition, cluster_scoped=False, patterns={}))
    assert "**not read-only**" in section
    assert "| `tail` | integer, from 1 to 9 | `5` |" in section
    assert "| `namespace` | string, at most 63 characters | required |" in section
    assert "one of `A`, `B\\|C`" in section                      # a | cannot break the table


def test_the_flags_page_has_every_flag_of_every_command():
    page = docs_gen.flags_page()
    for heading, _, parser in docs_gen.parsers():
        section = page.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
        for action in parser._actions:
            for flag in action.option_strings:
                if flag not in ("-h", "--help"):
                    assert re.search(rf"^\| `{re.escape(flag)}[ `,]", section, re.M), flag
    assert "| `--kubeconfig KUBECONFIG` |" in page and "| `KUBECONFIG` |" in page


def test_a_flag_default_comes_from_the_parser_or_its_help():
    parser = argparse.ArgumentParser(prog="x")
    given = parser.add_argument("--size", type=float, default=2.5, help="size (default %(default)g)")
    worded = parser.add_argument("--ctx", help="context (default: the current one; from $KUBE_CTX)")
    switch = parser.add_argument("--quiet", action="store_true", help="say less")
    assert docs_gen.flag_default(given, docs_gen.flag_help(given, "x")) == ("`2.5`", "size (default 2.5)")
    assert docs_gen.flag_default(worded, worded.help) == ("the current one; from $KUBE_CTX", "context")
    assert docs_gen.flag_default(switch, switch.help) == ("off", "say less")
    section = "\n".join(docs_gen.parser_section("x", "x [options]", parser))
    assert "| `--ctx CTX` | the current one; from $KUBE_CTX | `KUBE_CTX` | context |" in section
