"""Prices per device-hour, and what they make a million tokens cost.

A price is named by a pool (``acme/Acme X1``), a product (``Acme X1``) or a hardware
profile (``acme``); the most specific name that matches a pool wins, so a user can price a
whole vendor and one product apart. Prices come from ``--price KEY=USD`` flags, from a small
YAML file (``prices: {KEY: USD}`` or the mapping alone), or from the API request's ``prices``.

Cost of a shape::

    cost per hour            = devices x price per device-hour
    cost per million tokens  = devices x price / (tokens a second x 3600) x 10^6

Input tokens bear the devices' time spent on prefill, output tokens the time on decode (a P/D
shape: its prefill and its decode workers; an aggregated one: the share of each replica's time).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import msgspec

from llm_d_lens.planning.errors import PriceInvalid

#: a device-hour price beyond this is a typo (the dearest accelerators rent for tens of dollars)
MAX_PRICE = 10_000.0
MAX_KEY = 320

FORMULAS = {
    "cost_per_hour": "devices x price per device-hour",
    "cost_per_million_input": "devices on prefill x price / (input tokens a second x 3600) x 10^6",
    "cost_per_million_output": "devices on decode x price / (output tokens a second x 3600) x 10^6",
    "cost_per_million_output_all_devices": "all devices x price / (output tokens a second x 3600) x 10^6 (the rank's figure)",
}


class Prices(msgspec.Struct, frozen=True):
    """Device-hour prices by pool, product or profile name, and where each came from."""

    by_key: dict[str, float] = msgspec.field(default_factory=dict)
    source: str = "none given"

    def for_pool(self, pool_name: str, profile_id: str, product: str) -> tuple[float, str] | None:
        """The price of one device of the pool and the name it was given under, most specific first."""
        for key in (pool_name, product, *product.split(", "), profile_id):
            if key in self.by_key:
                return self.by_key[key], key
        return None

    def unmatched(self, pools: list[tuple[str, str, str]]) -> list[str]:
        """Names priced that match no pool of the plan (a typo, or hardware this cluster lacks)."""
        used = {hit[1] for pool in pools if (hit := self.for_pool(*pool)) is not None}
        return sorted(set(self.by_key) - used)

    def to_dict(self) -> dict[str, Any]:
        return {"prices_usd_per_device_hour": dict(self.by_key), "source": self.source}


def checked_price(source: str, key: Any, value: Any) -> tuple[str, float]:
    """A (name, price) pair, or a coded refusal naming the entry."""
    if not isinstance(key, str) or not key.strip() or len(key) > MAX_KEY:
        raise PriceInvalid(source, "key", key, f"must be a pool, product or profile name of 1 to {MAX_KEY} characters")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise PriceInvalid(source, key, value, "must be a number of dollars per device-hour")
    if not 0 < value <= MAX_PRICE:
        raise PriceInvalid(source, key, value, f"must be above 0 and at most {MAX_PRICE:,.0f} dollars per device-hour")
    return key.strip(), float(value)


def parse_flags(values: list[str]) -> dict[str, float]:
    """``--price KEY=USD`` flags as a mapping; a malformed flag is refused by its text."""
    prices: dict[str, float] = {}
    for text in values:
        key, sep, number = text.rpartition("=")
        if not sep:
            raise PriceInvalid("--price", text, text, "must be KEY=USD, e.g. acme=2.5 or 'acme/Acme X1=3.1' (profile, product or pool)")
        try:
            value: Any = float(number)
        except ValueError:
            value = number
        name, price = checked_price("--price", key, value)
        if name in prices:
            raise PriceInvalid("--price", name, text, "is priced twice")
        prices[name] = price
    return prices


def parse_mapping(data: Any, source: str) -> dict[str, float]:
    """A price file's or request's mapping (``prices:`` may wrap it) checked entry by entry."""
    if isinstance(data, dict) and set(data) == {"prices"}:
        data = data["prices"]
    if not isinstance(data, dict):
        raise PriceInvalid(source, "prices", data, "must be a mapping of pool, product or profile name to dollars a device-hour")
    return dict(checked_price(source, key, value) for key, value in data.items())


def load_file(path: Path) -> dict[str, float]:
    """A YAML price file, read strictly (a name given twice is refused)."""
    import yaml

    from llm_d_lens.files import TextUnreadable, read_text
    from llm_d_lens.yamlread import MAX_BYTES, DuplicateKey, load

    try:
        text = read_text(path, limit=MAX_BYTES)
    except TextUnreadable as exc:
        raise PriceInvalid(str(path), "file", str(path), exc.problem) from None
    try:
        data = load(text)
    except DuplicateKey as exc:
        raise PriceInvalid(str(path), exc.path, exc.path, "is priced twice") from None
    except yaml.YAMLError as exc:
        raise PriceInvalid(str(path), "file", str(path), f"is not YAML: {str(exc).splitlines()[0]}") from None
    return parse_mapping(data, str(path))


def prices_from(flags: list[str] | None = None, file: Path | None = None) -> Prices:
    """Flags over the file: a flag prices a name the file prices too."""
    by_key: dict[str, float] = {}
    sources = []
    if file is not None:
        by_key.update(load_file(file))
        sources.append(str(file))
    if flags:
        by_key.update(parse_flags(flags))
        sources.append("--price")
    return Prices(by_key, " and ".join(sources) or "none given")


def per_million(devices: float, price: float, tokens_per_second: float) -> float | None:
    """Dollars a million tokens cost on ``devices`` at ``price`` a device-hour, or None without throughput."""
    if tokens_per_second <= 0 or not math.isfinite(tokens_per_second):
        return None
    return devices * price / (tokens_per_second * 3600) * 1e6
