"""Kubernetes resource quantities ("500m", "1.5Gi", "2e3", "128974848") as exact numbers.

`parse_quantity(text) -> Fraction | None`: binary suffixes (Ki Mi Gi Ti Pi Ei), decimal ones
(n u m "" k M G T P E) and decimal exponents (e3, E-2), as the API server accepts them; None for
anything else, so a digest can say "unparsable" instead of guessing. Fractions keep 100m + 200m
exactly 300m, which a float would not.
"""

import re
from fractions import Fraction

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": 1,
            "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
_QUANTITY = re.compile(r"([+-]?(?:\d+(?:\.\d*)?|\.\d+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?")


def parse_quantity(text):
    """The value of a quantity string (or number) as a Fraction, or None when it is not one."""
    if isinstance(text, bool):
        return None
    if isinstance(text, (int, float)):
        return Fraction(text)
    if not isinstance(text, str):
        return None
    match = _QUANTITY.fullmatch(text.strip())
    if not match:
        return None
    number, suffix = Fraction(match.group(1)), match.group(2) or ""
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    if suffix in _DECIMAL:
        return number * _DECIMAL[suffix]
    exponent = int(suffix[1:])
    if abs(exponent) > 30:  # beyond any real quantity; refuse instead of building huge numbers
        return None
    return number * Fraction(10) ** exponent


def percent(used, hard):
    """used/hard as a whole percentage, or None when either is unknown or hard is 0."""
    if used is None or hard is None or hard == 0:
        return None
    return int(used * 100 / hard)
