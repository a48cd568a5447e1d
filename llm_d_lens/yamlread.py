"""Reading YAML strictly: a key given twice in one mapping is an error, not a silent replacement.

PyYAML's safe loader keeps the last of two equal keys without a word, so a user who wrote a key
twice gets a value they did not mean. Every YAML file Lens reads (workload profiles, the clusters
file) goes through :func:`load`; the caller turns :class:`DuplicateKey` into its own coded error
naming the file, since only it knows what the file is.
"""

from __future__ import annotations

from typing import Any

import yaml


class DuplicateKey(Exception):
    """A mapping names ``path`` (the repeated key) twice."""

    def __init__(self, path: str):
        super().__init__(path)
        self.path = path


class _UniqueKeyLoader(yaml.SafeLoader):
    """The safe loader, refusing a key given twice in one mapping."""

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if key in seen:
                raise DuplicateKey(str(key))
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def load(text: str) -> Any:
    """``text`` as YAML with the safe loader's types; :class:`DuplicateKey` or ``yaml.YAMLError`` when it is not."""
    return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
