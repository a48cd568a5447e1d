"""Reading YAML strictly and within bounds, before any work is done on what it says.

PyYAML's safe loader keeps the last of two equal keys without a word, so a user who wrote a key
twice gets a value they did not mean: here it is :class:`DuplicateKey`. The safe loader also
builds whatever the text describes, and a few hundred bytes of anchors and aliases (``&a [..]``,
``&b [*a, *a, ...]``, nine levels deep) describe a billion strings: nothing is copied while
loading, but every reader after it (a check, an error echoing the value) walks the expansion.
And each level of nesting is a level of recursion in the composer, so a 5,000-deep file ends in
a RecursionError. So :func:`load` refuses, before building anything:

* text longer than :data:`MAX_BYTES`;
* nesting deeper than :data:`MAX_DEPTH`;
* more than :data:`MAX_NODES` values once every alias is expanded, and an alias inside the very
  value it names (a cycle).

Each refusal is a :class:`YamlRefused`, a ``yaml.YAMLError``, so callers that report invalid YAML
report these too; the caller names the file, since only it knows what the file is. Every YAML
file Lens reads (workload profiles, the clusters file) goes through :func:`load`.
"""

from __future__ import annotations

from typing import Any

import yaml

#: characters of YAML one file may have; the files Lens reads are a few kilobytes
MAX_BYTES = 4 * 1024 * 1024
#: levels of nesting; the deepest file Lens reads nests about five
MAX_DEPTH = 100
#: values (scalars, lists, mappings) once aliases are expanded
MAX_NODES = 200_000


class DuplicateKey(Exception):
    """A mapping names ``path`` (the repeated key) twice."""

    def __init__(self, path: str):
        super().__init__(path)
        self.path = path


class YamlRefused(yaml.YAMLError):
    """The text is over one of the bounds above: refused before it is built."""


class _UniqueKeyLoader(yaml.SafeLoader):
    """The safe loader, refusing a key given twice in one mapping and nesting past :data:`MAX_DEPTH`."""

    def __init__(self, stream: str):
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark
                raise YamlRefused(f"nests deeper than {MAX_DEPTH} levels (line {mark.line + 1})")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if key in seen:
                raise DuplicateKey(str(key))
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def expanded_size(node: yaml.Node, limit: int = MAX_NODES) -> int:
    """How many values ``node`` stands for with every alias expanded; :class:`YamlRefused` past ``limit``
    or on an alias inside its own anchor. Linear in the distinct nodes: a shared one is counted once
    and multiplied, never walked again."""
    sizes: dict[int, int] = {}
    open_: set[int] = set()

    def size(item: yaml.Node) -> int:
        key = id(item)
        if key in sizes:
            return sizes[key]
        if key in open_:
            raise YamlRefused(f"an alias refers to the value that contains it (line {item.start_mark.line + 1})")
        open_.add(key)
        total = 1
        if isinstance(item, yaml.SequenceNode):
            for child in item.value:
                total += size(child)
                if total > limit:
                    break
        elif isinstance(item, yaml.MappingNode):
            for key_node, value_node in item.value:
                total += size(key_node) + size(value_node)
                if total > limit:
                    break
        open_.discard(key)
        if total > limit:
            raise YamlRefused(f"stands for more than {limit} values once its aliases are expanded "
                              f"(line {item.start_mark.line + 1}); write the values out, or use fewer aliases")
        sizes[key] = total
        return total

    return size(node)


def load(text: str) -> Any:
    """``text`` as YAML with the safe loader's types; :class:`DuplicateKey` or ``yaml.YAMLError``
    (:class:`YamlRefused` for the bounds) when it is not."""
    if len(text) > MAX_BYTES:
        raise YamlRefused(f"is {len(text)} characters long, more than the {MAX_BYTES} a YAML file may have")
    loader = _UniqueKeyLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        expanded_size(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def load_all(text: str, *, max_bytes: int = MAX_BYTES, max_nodes: int = MAX_NODES) -> list[Any]:
    """Every document of a multi-document ``text``, each bounded as :func:`load` bounds one, and
    ``max_nodes`` counted over them all (so many small documents cannot add up past it)."""
    if len(text) > max_bytes:
        raise YamlRefused(f"is {len(text)} characters long, more than the {max_bytes} a YAML file may have")
    loader = _UniqueKeyLoader(text)
    documents = []
    left = max_nodes
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            left -= expanded_size(node, left)
            documents.append(loader.construct_document(node))
    finally:
        loader.dispose()
    return documents
