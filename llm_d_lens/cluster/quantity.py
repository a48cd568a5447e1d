"""Kubernetes quantities (``resource.Quantity``): ``8``, ``500m``, ``128Gi``, ``1k``, ``1.5e3``.

Device counts, DRA capacities and claim consumption all arrive in this notation, and the inventory
must read them exactly: ``196592Mi`` of VRAM is not ``192G``, and ``1k`` millicores is 1000.
The grammar is the API server's (``k8s.io/apimachinery/pkg/api/resource``): an optionally signed
decimal number followed by a binary suffix (Ki..Ei), a decimal suffix (m, k, M, G, T, P, E) or a
decimal exponent (``e3``, ``E-2``). ``1E`` is one exa, ``1E3`` is one thousand.

Values are :class:`~decimal.Decimal` so nothing is rounded on the way; a plain integer string, by
far the most common case in a cluster, takes a fast path that never touches the regular expression.
"""

from __future__ import annotations

import decimal
import re
from decimal import Decimal

__all__ = ["QuantityError", "parse_quantity", "parse_count", "parse_bytes"]

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"m": Decimal("0.001"), "": Decimal(1), "k": Decimal(10**3), "M": Decimal(10**6),
            "G": Decimal(10**9), "T": Decimal(10**12), "P": Decimal(10**15), "E": Decimal(10**18)}
_QUANTITY = re.compile(
    r"(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?:(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)|[eE](?P<exponent>[+-]?[0-9]+))?"
)
# The API server refuses exponents this large; refusing them here keeps "1e999999999" from
# turning into a number with a billion digits.
_MAX_EXPONENT = 1000
#: The largest quantity Lens reads: a Kubernetes quantity's ``Value()`` is an int64, and so is every
#: count the API server keeps; 10^400 allocatable GPUs is a broken object, not a cluster.
MAX_QUANTITY = Decimal(2**63 - 1)
_TOO_LARGE = "is out of range (over 2^63-1, the largest value Kubernetes stores)"
# Enough digits that no quantity the API server accepts is rounded.
_CONTEXT = decimal.Context(prec=80, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)


class QuantityError(ValueError):
    """A value is not a quantity, or not the kind of quantity its field needs; ``reason`` says which."""

    def __init__(self, value: object, reason: str):
        super().__init__(reason)
        self.value = value
        self.reason = reason


def parse_quantity(value: object) -> Decimal:
    """The exact value of a quantity string (or a JSON number a hand-written file may hold)."""
    if isinstance(value, bool):
        raise QuantityError(value, "is not a quantity")
    return _bounded(value, _exact(value))


def _bounded(value: object, quantity: Decimal) -> Decimal:
    if abs(quantity) > MAX_QUANTITY:
        raise QuantityError(value, _TOO_LARGE)
    return quantity


def _exact(value: object) -> Decimal:
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise QuantityError(value, "is not a quantity")
        return Decimal(repr(value))
    if not isinstance(value, str):
        raise QuantityError(value, "is not a quantity")
    if value.isdigit() and value.isascii():
        return Decimal(value)
    match = _QUANTITY.fullmatch(value)
    if match is None:
        raise QuantityError(value, "is not a quantity")
    number = Decimal(match["number"])
    exponent = match["exponent"]
    if exponent is not None:
        power = int(exponent)
        if abs(power) > _MAX_EXPONENT:
            raise QuantityError(value, "is not a quantity (exponent out of range)")
        return number.scaleb(power, _CONTEXT)
    suffix = match["suffix"] or ""
    if suffix in _BINARY:
        return _CONTEXT.multiply(number, Decimal(_BINARY[suffix]))
    return _CONTEXT.multiply(number, _DECIMAL[suffix])


def parse_count(value: object) -> int:
    """A whole, non-negative number of things: devices, partitions, CPUs.

    Kubernetes stores device counts as quantities, so ``1k`` is 1000 devices; but a binary suffix
    (``8Gi``), a fraction (``500m``) or a negative number where a count belongs is a mistake in the
    object, and the caller names the object and field.
    """
    if type(value) is str and value.isdigit() and value.isascii() and len(value) < 19:
        return int(value)
    if type(value) is int and 0 <= value <= MAX_QUANTITY:
        return value
    quantity = parse_quantity(value)
    if isinstance(value, str) and value.endswith(tuple(_BINARY)):
        raise QuantityError(value, "is not a count (a binary suffix such as Gi belongs to sizes, not counts)")
    if quantity < 0:
        raise QuantityError(value, "is not a count (negative)")
    if quantity != quantity.to_integral_value():
        raise QuantityError(value, "is not a count (not a whole number)")
    return int(quantity)


def parse_bytes(value: object) -> int:
    """A size in bytes, rounded up to a whole byte as the API server's ``Value()`` does."""
    quantity = parse_quantity(value)
    if quantity < 0:
        raise QuantityError(value, "is not a size (negative)")
    return int(quantity.to_integral_value(rounding=decimal.ROUND_CEILING))
