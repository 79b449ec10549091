"""Prices and cost: the built-in price table, the operator's own prices, and the cost line.

`cost_usd(model, usage, prices)` prices one response's `usage` (USD per million tokens) from
the operator's `PriceTable` when it names the model (a prices file), else the built-in `PRICES`
(taken `PRICES_TAKEN`), else the operator's price for every other model (`--price-per-mtok`); a
model none of them prices is None, never a guess. A self-hosted model may be priced at zero.
Bedrock and Vertex ids price as the model they name (`table_id`). When a server-side fallback ran, `usage.iterations` holds per-model entries and each is priced
by its own model. `Usage` adds responses up for the outcome; `cost_line` is the one line at the
end; `money` rounds a USD amount wherever one is printed or serialized.

    prices file (--prices-file): {"MODEL": {"input": 0, "output": 0,
                                            "cache_read": 0, "cache_write": 0}, ...}
                                 (cache prices optional: they default to the input price)
"""

import json
import math
import re
from dataclasses import dataclass, field

PRICES_TAKEN = "2026-11"


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""
    input: float
    cache_write: float  # 5-minute cache write
    cache_read: float
    output: float

    @property
    def free(self) -> bool:
        return not (self.input or self.cache_write or self.cache_read or self.output)


@dataclass(frozen=True)
class PriceTable:
    """The operator's prices: by model id (a prices file) and for any other model the built-in
    table does not know (--price-per-mtok); `source` names them on the cost line."""
    models: dict = field(default_factory=dict)
    other: "Price | None" = None
    source: str = ""


class PriceError(ValueError):
    """A --price-per-mtok value or a prices file that cannot be read as prices."""


_OPUS_45_UP = Price(5, 6.25, 0.50, 25)
# (model family pattern, price). A model id matches when it is the family name, optionally
# followed by a date (`-20251001` or Vertex-style `@20251001`); anything else is unknown.
# Source: Anthropic's pricing page, platform.claude.com/docs/en/about-claude/pricing, read
# 2026-11. It lists Opus 4.5 to 4.8 at 5 / 6.25 / 0.50 / 25 but Opus 4.1 and Opus 4 (retired
# except on Bedrock / Google Cloud) at 15 / 18.75 / 1.50 / 75, so "Opus 4.x" in the issue holds
# for 4.5 and later only.
PRICES = (
    ("claude-opus-5-5", Price(4, 5, 0.20, 20)),
    ("claude-sonnet-5-5", Price(2, 2.5, 0.20, 10)),
    ("claude-sonnet-5", Price(2, 2.5, 0.20, 10)),
    ("claude-opus-5", _OPUS_45_UP),
    ("claude-opus-4-[5-9]", _OPUS_45_UP),
    ("claude-opus-4(?:-1)?", Price(15, 18.75, 1.50, 75)),
    ("claude-haiku-4-5", Price(1, 1.25, 0.10, 5)),
)
# A Bedrock or Vertex id names the same model: an ARN's last part, a region or geography
# prefix (us., eu., apac., global., us-gov.), `anthropic.`, a version suffix (-v1, -v1:0) and a
# Vertex `@DATE` come off before the table is read. An application inference profile's ARN
# names no model: unknown.
_PROVIDER_ID = re.compile(r"(?:[a-z][a-z-]{1,9}\.)?anthropic\.(?P<id>claude-[a-z0-9-]+?)"
                          r"(?:-v[0-9]+(?::[0-9]+)?)?")
_PRICE_PATTERNS = tuple((re.compile(f"(?:{family})(?:[-@][0-9]{{8}})?"), price)
                        for family, price in PRICES)


def _number(text, what):
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise PriceError(f"{what}: {text!r} is not a number") from None
    if isinstance(text, bool) or not math.isfinite(value) or value < 0:
        raise PriceError(f"{what}: {text!r} is not a price (USD per million tokens, >= 0)")
    return value


def parse_per_mtok(text) -> Price:
    """`INPUT,OUTPUT[,CACHE_READ,CACHE_WRITE]` in USD per million tokens; the cache prices
    default to the input price (a server without a prompt cache bills them as input)."""
    parts = [p.strip() for p in str(text).split(",")]
    if len(parts) not in (2, 3, 4):
        raise PriceError(f"{text!r}: give INPUT,OUTPUT or INPUT,OUTPUT,CACHE_READ,CACHE_WRITE")
    names = ("input", "output", "cache read", "cache write")
    values = [_number(p, names[i]) for i, p in enumerate(parts)]
    values += [values[0]] * (4 - len(values))
    return Price(input=values[0], output=values[1], cache_read=values[2], cache_write=values[3])


def load_prices_file(path) -> dict:
    """{model id: Price} from a prices file (the module docstring has its shape)."""
    try:
        with open(path, encoding="utf-8") as file:
            data = json.load(file)
    except OSError as exc:
        raise PriceError(f"cannot read {path!r} ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise PriceError(f"{path!r} is not JSON ({exc})") from None
    if not isinstance(data, dict) or not data:
        raise PriceError(f"{path!r}: expected an object of model id -> prices")
    table = {}
    for model, entry in data.items():
        if not isinstance(entry, dict) or not {"input", "output"} <= set(entry) \
                or set(entry) - {"input", "output", "cache_read", "cache_write"}:
            raise PriceError(f"{path!r}: {model!r} needs input and output (and optionally "
                             "cache_read, cache_write), in USD per million tokens")
        values = {k: _number(v, f"{model} {k}") for k, v in entry.items()}
        table[model] = Price(input=values["input"], output=values["output"],
                             cache_read=values.get("cache_read", values["input"]),
                             cache_write=values.get("cache_write", values["input"]))
    return table


def table_id(model: str) -> str:
    """The Anthropic model id a Bedrock id, inference profile or ARN names (others unchanged):
    us.anthropic.claude-opus-4-5-20251101-v1:0 -> claude-opus-4-5-20251101."""
    model = model.strip()
    if model.startswith("arn:"):
        model = model.rsplit("/", 1)[-1]
    found = _PROVIDER_ID.fullmatch(model)
    return found.group("id") if found else model


def builtin_price(model) -> "Price | None":
    """The built-in table's price of `model` (an Anthropic, Bedrock or Vertex id), or None."""
    if not isinstance(model, str):
        return None
    model = table_id(model)
    for pattern, price in _PRICE_PATTERNS:
        if pattern.fullmatch(model):
            return price
    return None


def price_for(model, prices=None) -> "Price | None":
    """The price of `model`: the operator's for that model, the table's, the operator's for
    any other model; None when nobody prices it."""
    if prices is not None and isinstance(model, str) and model.strip() in prices.models:
        return prices.models[model.strip()]
    known = builtin_price(model)
    if known is not None or prices is None:
        return known
    return prices.other


def _tokens(usage: dict):
    """(input, cache_write, cache_read, output) from one usage dict; None if malformed."""
    counts = []
    for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
                "output_tokens"):
        value = usage.get(key) or 0
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return None
        counts.append(value)
    return tuple(counts)


def _price_one(model, usage, prices) -> "float | None":
    price = price_for(model, prices)
    counts = _tokens(usage) if isinstance(usage, dict) else None
    if price is None or counts is None:
        return None
    fresh, write, read, out = counts
    return (fresh * price.input + write * price.cache_write + read * price.cache_read
            + out * price.output) / 1_000_000


def cost_usd(model, usage, prices=None) -> "float | None":
    """USD for one response's usage; None when any part of it cannot be priced."""
    if not isinstance(usage, dict):
        return None
    iterations = usage.get("iterations")
    if isinstance(iterations, list) and iterations:
        total = 0.0
        for entry in iterations:
            if not isinstance(entry, dict):
                return None
            part = _price_one(entry.get("model") or model, entry, prices)
            if part is None:
                return None
            total += part
        return total
    return _price_one(model, usage, prices)


@dataclass
class Usage:
    """Token totals by kind over a run, and their cost (None once anything was unpriced)."""
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cost: "float | None" = 0.0

    def add(self, model, usage, prices=None) -> "float | None":
        """Add one response's usage; returns that response's cost."""
        counts = _tokens(usage) if isinstance(usage, dict) else None
        if counts is not None:
            self.input += counts[0]
            self.cache_write += counts[1]
            self.cache_read += counts[2]
            self.output += counts[3]
        cost = cost_usd(model, usage, prices)
        self.cost = None if cost is None or self.cost is None else self.cost + cost
        return cost

    def as_dict(self) -> dict:
        """The token totals without the cost (the outcome's `usage`)."""
        return {"input": self.input, "output": self.output, "cache_read": self.cache_read,
                "cache_write": self.cache_write}


def money(usd) -> "float | None":
    """A USD amount rounded to a millionth of a dollar (no float noise in tickets); None stays."""
    return round(usd, 6) if isinstance(usd, (int, float)) and not isinstance(usd, bool) else None


def cost_line(model, usage, prices=None, *, provider=None) -> str:
    """The one human line at the end of a run: a Usage's tokens by kind and USD (or why not);
    `provider` (aws.bedrock, gcp.vertex_ai) is named after the model when it is not Anthropic's."""
    tokens = (f"input {usage.input:,} · cache write {usage.cache_write:,}"
              f" · cache read {usage.cache_read:,} · output {usage.output:,}")
    price = price_for(model, prices)
    theirs = prices is not None and price is not None and price is not builtin_price(model)
    if usage.cost is None:
        money = (f"$ unknown (no price for {model!r} in the table of {PRICES_TAKEN}; give "
                 "--price-per-mtok or --prices-file)")
    elif theirs and price.free and usage.cost == 0:
        money = f"$0 (priced at zero by {prices.source}: a local model costs no API fees)"
    elif theirs:
        money = f"${usage.cost:.4f} (prices of {prices.source})"
    else:
        money = f"${usage.cost:.4f} (prices of {PRICES_TAKEN})"
    where = f" on {provider}" if provider and provider != "anthropic" else ""
    return f"cost: {model}{where} · tokens: {tokens} · {money}"
