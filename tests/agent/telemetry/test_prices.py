"""The operator's prices (telemetry/prices.py): --price-per-mtok and --prices-file read strictly,
looked up after a file's own entry and the built-in table, and said on the cost line."""

import json

import pytest

from triage_agent.telemetry import prices
from triage_agent.telemetry.prices import (Price, PriceError, PriceTable, Usage, cost_line,
                                           cost_usd, load_prices_file, parse_per_mtok, price_for)

MTOK = {"input_tokens": 1_000_000, "output_tokens": 1_000_000,
        "cache_read_input_tokens": 1_000_000, "cache_creation_input_tokens": 1_000_000}


def test_per_mtok_takes_two_or_four_prices_and_the_cache_defaults_to_input():
    assert parse_per_mtok("0,0") == Price(0, 0, 0, 0)
    assert parse_per_mtok(" 1.5, 3 ") == Price(input=1.5, cache_write=1.5, cache_read=1.5,
                                               output=3)
    assert parse_per_mtok("1,3,0.1,2") == Price(input=1, cache_write=2, cache_read=0.1, output=3)


@pytest.mark.parametrize("text", ["1", "1,2,3,4,5", "a,1", "1,-1", "nan,1", "inf,1", "1,,2"])
def test_per_mtok_refuses_what_is_not_prices(text):
    with pytest.raises(PriceError):
        parse_per_mtok(text)


def test_a_prices_file_by_model(tmp_path):
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"qwen3:8b": {"input": 0, "output": 0},
                                "big": {"input": 1, "output": 2, "cache_read": 0.5}}))
    table = load_prices_file(path)
    assert table["qwen3:8b"].free and table["big"] == Price(1, 1, 0.5, 2)


@pytest.mark.parametrize("content, words", [
    ("[1]", "expected an object"), ("{}", "expected an object"), ("{", "is not JSON"),
    ('{"m": {"input": 1}}', "needs input and output"),
    ('{"m": {"input": 1, "output": 1, "cache": 2}}', "needs input and output"),
    ('{"m": {"input": "x", "output": 1}}', "is not a number"),
    ('{"m": {"input": true, "output": 1}}', "is not a price")])
def test_a_broken_prices_file_says_what_is_wrong(tmp_path, content, words):
    path = tmp_path / "prices.json"
    path.write_text(content)
    with pytest.raises(PriceError, match=words):
        load_prices_file(path)


def test_lookup_order_file_then_table_then_any_other():
    mine = Price(9, 9, 9, 9)
    table = PriceTable({"claude-haiku-4-5": mine}, Price(0, 0, 0, 0), "x")
    assert price_for("claude-haiku-4-5", table) is mine           # the operator's word first
    assert price_for("claude-opus-5-5", table).input == 4          # then the built-in table
    assert price_for("local", table).free                          # then any other model
    assert price_for("local") is None and cost_usd("local", MTOK) is None
    assert cost_usd("local", MTOK, PriceTable({}, parse_per_mtok("1,2"), "y")) == 5


def test_the_cost_line_says_zero_the_operators_prices_or_unknown():
    free = PriceTable({}, Price(0, 0, 0, 0), "--price-per-mtok 0,0")
    usage = Usage()
    usage.add("local", MTOK, free)
    assert usage.cost == 0
    assert cost_line("local", usage, free).endswith(
        "$0 (priced at zero by --price-per-mtok 0,0: a local model costs no API fees)")
    paid = PriceTable({"local": Price(1, 1, 1, 1)}, None, "--prices-file p.json")
    usage = Usage()
    usage.add("local", MTOK, paid)
    assert cost_line("local", usage, paid).endswith("$4.0000 (prices of --prices-file p.json)")
    usage = Usage()
    usage.add("claude-opus-5-5", MTOK, free)
    assert cost_line("claude-opus-5-5", usage, free).endswith("(prices of 2026-11)")
    unknown = Usage()
    unknown.add("local", MTOK)
    assert "$ unknown (no price for 'local'" in cost_line("local", unknown)


@pytest.mark.parametrize("model, family", [
    ("anthropic.claude-haiku-4-5-20251001-v1:0", "claude-haiku-4-5"),
    ("us.anthropic.claude-opus-4-5-20251101-v1:0", "claude-opus-4-5"),
    ("global.anthropic.claude-sonnet-5-v1", "claude-sonnet-5"),
    ("us-gov.anthropic.claude-opus-5-5-v1:0", "claude-opus-5-5"),
    ("arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-opus-4-1-20250805-v1:0",
     "claude-opus-4-1"),
    ("arn:aws:bedrock:eu-west-1:123456789012:inference-profile/eu.anthropic.claude-opus-5-5-v1:0",
     "claude-opus-5-5"),
    ("claude-opus-4-5@20251101", "claude-opus-4-5")])
def test_bedrock_and_vertex_ids_price_as_the_model_they_name(model, family):
    assert prices.builtin_price(model) is prices.builtin_price(family) is not None


@pytest.mark.parametrize("model", [
    "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3d4",
    "meta.llama3-70b-instruct-v1:0", "anthropic.claude-unknown-9-v1:0", "claude-opus-5-5-v1:0"])
def test_ids_that_name_no_priced_model_stay_unknown(model):
    assert prices.builtin_price(model) is None


def test_the_cost_line_names_a_cloud_provider():
    usage = prices.Usage(input=1000, output=10, cost=0.0042)
    line = prices.cost_line("us.anthropic.claude-opus-5-5-v1:0", usage, provider="aws.bedrock")
    assert line.startswith("cost: us.anthropic.claude-opus-5-5-v1:0 on aws.bedrock · tokens:")
    assert prices.cost_line("claude-opus-5-5", usage, provider="anthropic").startswith(
        "cost: claude-opus-5-5 · tokens:")
