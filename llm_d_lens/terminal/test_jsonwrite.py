"""``-o json`` through the C encoder and msgspec's layout writes exactly what ``json.dumps(indent=2)`` wrote."""

from __future__ import annotations

import enum
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from llm_d_lens.terminal.jsonwrite import dumps_indented
from llm_d_lens.terminal.output import to_jsonable

REPO = Path(__file__).resolve().parents[2]


def today(data: Any) -> str:
    """What ``output.emit`` wrote for ``-o json`` before the fast path."""
    return json.dumps(to_jsonable(data), indent=2, sort_keys=False) + "\n"


class Colour(str, enum.Enum):
    red = "rouge"


class Level(enum.IntEnum):
    high = 3


class Model(BaseModel):
    name: str
    sizes: list[float]
    note: str | None = None


@dataclass
class Record:
    name: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "model": Model(name="inner", sizes=[1e-05])}


FLOATS = [0.1, 100.0, -0.0, 1e-05, 1.5e-07, 1e16, 1e22, 5e-324, 1.7976931348623157e308, 1 / 3, 123456789012345680.0, 2.5e-4]
TEXT = ["", "caf\u00e9", "\u20ac", "\U0001f680", "\x00\x01\x1f\x7f", "tab\tnew\nline\r", 'quote" back\\ slash/', "\u2028", "\ud800"]


@pytest.mark.parametrize("data", [
    {"floats": FLOATS, "ints": [0, -1, 2**63 - 1, 2**70, -(2**90)], "text": TEXT, "bools": [True, False, None]},
    {"empty": [{}, [], [[]], {"a": {}}], "tuple": (1, (2, 3)), "": {"": ""}},
    {7: "int key", 2.5: "float key", True: "bool key", None: "none key", "é": "non-ASCII key"},
    {"enum": Colour.red, "int enum": Level.high, "model": Model(name="m", sizes=[1.0, 1e-07]), "models": [Model(name="ü", sizes=[])]},
    [Record("a")], "a plain string", 3, 1e-05, None, [], {},
    {"nan": float("nan"), "inf": [float("inf"), float("-inf")]},  # not JSON: written as indent=2 writes it
], ids=["scalars", "containers", "keys", "objects", "to_dict", "str", "int", "float", "null", "list", "dict", "non-finite"])
def test_documents_are_written_byte_for_byte_as_before(data: Any) -> None:
    if isinstance(data, list) and data and isinstance(data[0], Record):
        # to_jsonable leaves the models inside to_dict() unconverted, so json.dumps refused it before;
        # the fast path converts them as the encoder meets them
        assert json.loads(dumps_indented(data)) == [{"name": "a", "model": {"name": "inner", "sizes": [1e-05], "note": None}}]
        return
    assert dumps_indented(data) == today(data)


def test_what_could_not_be_written_before_is_refused_as_before() -> None:
    for data in ({"path": Path("/x")}, {"set": {1, 2}}, {("a", "b"): 1}):
        with pytest.raises(TypeError):
            today(data)
        with pytest.raises(TypeError):
            dumps_indented(data)


def test_the_demo_overview_is_written_as_before(capsys: pytest.CaptureFixture[str]) -> None:
    from llm_d_lens.cli.app import main

    assert main(["cluster", "inspect", "--demo", "-o", "json"]) == 0
    written = capsys.readouterr().out
    from llm_d_lens.cluster.service import inspect
    from llm_d_lens.cluster.source import ClusterSource

    assert written == today(inspect(ClusterSource(demo=True)).to_dict())
    assert written.count("\n") > 100


def test_a_generated_cluster_with_non_ascii_values_is_written_as_before(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sys.path.insert(0, str(REPO / "bench"))
    try:
        import inventory as bench
    finally:
        sys.path.pop(0)
    path = tmp_path / "c.json"
    bench.write_snapshot(path, 40, 3, indent=0)
    text = path.read_text()
    # node names and label values with accents, CJK and an emoji, as people name things
    text = text.replace('"node-00001"', '"n\\u0153ud-\\u00e9t\\u00e9"')
    text = text.replace('"NVIDIA-H100-80GB-HBM3"', '"NVIDIA-H100 \\u6771\\u4eac \\ud83d\\ude80"')
    path.write_text(text)
    from llm_d_lens.cli.app import main

    assert main(["cluster", "inspect", "--snapshot", str(path), "-o", "json"]) == 0
    written = capsys.readouterr().out
    from llm_d_lens.cluster.service import inspect
    from llm_d_lens.cluster.source import ClusterSource

    overview = inspect(ClusterSource(snapshot=path)).to_dict()
    assert written == today(overview)
    assert "\\u00e9" in written and "\\ud83d\\ude80" in written  # escaped, as ensure_ascii wrote them
