"""The known-format table (mcp_kubectl_server/redact/formats.py), row by row: fresh values of
each shape are found by the table alone, whole, in the contexts a tool shows them in; a prefix
with too short a body is left alone."""

import random

import pytest

from fixtures.kube_sim.scenarios.planted import token
from mcp_kubectl_server.redact import MASK, redact
from mcp_kubectl_server.redact.formats import parts, redact_formats, rows

ROWS = rows()
RNG = random.Random(random.SystemRandom().getrandbits(64))   # fresh values every run
CONTEXTS = ["{}", "deploy {} ok", "X={}", '{{"v": "{}"}}', "'{}'", "(uses {})", "a\n{}\nb"]


def test_the_table_is_well_beyond_the_first_list():
    assert len(ROWS) >= 90 and len({row.vendor for row in ROWS}) >= 70


@pytest.mark.parametrize("row", ROWS, ids=[f"{r.vendor}: {r.what}" for r in ROWS])
def test_each_format_is_found_by_the_table_alone_in_every_context(row):
    for context in CONTEXTS:
        value = token(RNG, row.shape)
        text = context.format(value)
        assert redact_formats(text) == context.format(MASK), (row.shape, text)
        assert value not in redact(text)


@pytest.mark.parametrize("row", [r for r in ROWS if parts(r.shape)[0][0] == "lit"],
                         ids=lambda r: r.shape)
def test_a_prefix_with_a_short_body_is_not_a_token(row):
    text = f"see {parts(row.shape)[0][1]}ab1 here"   # the prefix, then too little to be a token
    assert redact_formats(text) == text


# A shape whose literal sits inside it (`{azure:3}{dig:1}Q~...`) is found from that literal back;
# a fresh value whose head holds the literal too (Q~4 + 1Q~...) leaked once in 1,000 planted
# tables: the first, false gate swallowed the real one.
@pytest.mark.parametrize("secret", ["Q~41Q~af8UIgqeSEHHfI2F13zQDQ~RykwJsdE",
                                    "aQ~7Q~7el6Fune_BkHFt2Y.O3PEe-slZnEnliY",
                                    "Q~Q1Q~Q~Q~Q~Q~Q~Q~Q~Q~Q~Q~Q~Q~Q~Q~Q~Q~"])
def test_an_infix_literal_in_the_head_too_still_finds_the_token(secret):
    for context in CONTEXTS:
        assert redact_formats(context.format(secret)) == context.format(MASK), secret
