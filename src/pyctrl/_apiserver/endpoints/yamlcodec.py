"""YAML request bodies, decoded the way kube-apiserver's ``sigs.k8s.io/yaml`` does, safely.

kube-apiserver turns a YAML body into JSON with go-yaml v2 (``sigs.k8s.io/yaml``), which:

- reads only the *first* document of the body (what follows a ``---`` is ignored);
- refuses a document whose aliases expand into most of its decoding work
  (CVE-2019-11253, the "billion laughs"): each node decoded counts, those reached through
  an alias count as aliased too, and once more than 100 are aliased among more than 1,000
  decoded, an aliased share above 99 % (for up to 400,000 decodes, falling linearly to
  10 % at 4,000,000) fails with ``yaml: document contains excessive aliasing``;
- refuses an alias to an anchor that is not defined (yet) in the document
  (``yaml: unknown anchor 'a' referenced``) or to the node it stands in
  (``yaml: anchor 'a' value contains itself``);
- bounds nesting (go-yaml: 10,000 levels).

PyYAML composes and checks nodes recursively, so a body nested a few hundred levels deep
exhausted Python's stack. `load` composes the node graph iteratively from the parser's
events instead, bounds nesting at `MAX_DEPTH` (just above what the server stores at all,
`pyctrl._apiserver.storage.store.MAX_OBJECT_DEPTH`; PyYAML's scanner slows down with depth, so it
stops early), replays go-yaml's alias accounting on the graph
without expanding it, and only then builds the Python value (PyYAML's safe constructor
shares aliased nodes, it does not copy them). Every failure is a `yaml.YAMLError`, which
the server answers with 400 BadRequest.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.events import (
    AliasEvent,
    CollectionStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    StreamEndEvent,
)
from yaml.nodes import CollectionNode, MappingNode, Node, ScalarNode, SequenceNode

__all__ = ["MAX_DEPTH", "load"]

MAX_DEPTH = 256
"""The deepest nesting parsed; the store takes 246 levels (orjson encodes 254)."""

_RATIO_RANGE_LOW = 400_000
_RATIO_RANGE_HIGH = 4_000_000
_MERGE_TAG = "tag:yaml.org,2002:merge"


def load(raw: bytes | str) -> Any:
    """The first YAML document of ``raw`` as plain data (None for an empty body).

    Raises:
        yaml.YAMLError: The YAML is malformed, nested deeper than `MAX_DEPTH`, aliases
            too much, or names an unknown anchor; the message is go-yaml's.
    """
    loader = yaml.SafeLoader(raw)
    try:
        node, aliases = _compose_first(loader)
        if node is None:
            return None
        if aliases:
            _check_aliasing(node, aliases)
        try:
            return loader.construct_document(node)
        except RecursionError:
            # Merge keys (<<) are flattened recursively: a chain of nested merges.
            raise yaml.YAMLError(f"yaml: exceeded max depth of {MAX_DEPTH}") from None
    finally:
        loader.dispose()


def _compose_first(loader: Any) -> tuple[Node | None, set[tuple[int, int]]]:  # noqa: PLR0912, PLR0915 - go-yaml's composition with alias accounting, one branch per node event
    """The first document's root node, and its alias edges as (id(parent), child ordinal).

    ``loader`` is a `yaml.SafeLoader` (its parser is untyped in types-PyYAML).
    """
    loader.get_event()  # StreamStart
    if loader.check_event(StreamEndEvent):
        return None, set()
    loader.get_event()  # DocumentStart
    anchors: dict[str, Node] = {}
    open_nodes: set[int] = set()
    aliases: set[tuple[int, int]] = set()
    stack: list[CollectionNode] = []
    ordinals: list[int] = []
    root: Node | None = None
    while root is None:
        event: Any = loader.get_event()
        cls = type(event)
        is_alias = False
        node: Node
        if issubclass(cls, AliasEvent):
            target = anchors.get(event.anchor)
            if target is None:
                raise yaml.YAMLError(f"yaml: unknown anchor '{event.anchor}' referenced")
            if id(target) in open_nodes:
                raise yaml.YAMLError(f"yaml: anchor '{event.anchor}' value contains itself")
            node, is_alias = target, True
        elif issubclass(cls, ScalarEvent):
            tag = event.tag
            if tag is None or tag == "!":
                tag = loader.resolve(ScalarNode, event.value, event.implicit)
            node = ScalarNode(tag, event.value, event.start_mark, event.end_mark, event.style)
            if event.anchor is not None:
                anchors[event.anchor] = node
        elif issubclass(cls, CollectionStartEvent):
            kind = MappingNode if issubclass(cls, MappingStartEvent) else SequenceNode
            tag = event.tag
            if tag is None or tag == "!":
                tag = loader.resolve(kind, None, event.implicit)
            collection = kind(tag, [], event.start_mark, None, flow_style=event.flow_style)
            if event.anchor is not None:
                anchors[event.anchor] = collection
            if len(stack) >= MAX_DEPTH:
                raise yaml.YAMLError(f"yaml: exceeded max depth of {MAX_DEPTH}")
            stack.append(collection)
            ordinals.append(0)
            open_nodes.add(id(collection))
            continue
        elif issubclass(cls, SequenceEndEvent | MappingEndEvent):
            node = stack.pop()
            ordinals.pop()
            open_nodes.discard(id(node))
            node.end_mark = event.end_mark
        else:  # pragma: no cover - the parser yields nothing else inside a document
            raise yaml.YAMLError(f"yaml: unexpected {type(event).__name__}")
        if not stack:
            root = node
            break
        parent = stack[-1]
        ordinal = ordinals[-1]
        ordinals[-1] = ordinal + 1
        if is_alias:
            aliases.add((id(parent), ordinal))
        if isinstance(parent, MappingNode):
            if ordinal % 2 == 0:
                parent.value.append((node, None))
            else:
                key, _ = parent.value[-1]
                parent.value[-1] = (key, node)
        else:
            parent.value.append(node)
    return root, aliases


def _allowed_alias_ratio(decodes: int) -> float:
    """go-yaml's ``allowedAliasRatio``."""
    if decodes <= _RATIO_RANGE_LOW:
        return 0.99
    if decodes >= _RATIO_RANGE_HIGH:
        return 0.10
    share = (decodes - _RATIO_RANGE_LOW) / (_RATIO_RANGE_HIGH - _RATIO_RANGE_LOW)
    return 0.99 - 0.89 * share


def _check_aliasing(root: Node, aliases: set[tuple[int, int]]) -> None:
    """Replay go-yaml v2's decode of ``root``, counting, and fail as it would.

    go-yaml counts one decode per node it enters (the document, every key, value and item,
    an alias node and then, again, the node the alias stands for), and one aliased decode
    per node entered while inside an alias. The walk stops at the first failure, so a bomb
    costs no more than the decodes go-yaml itself does before giving up.
    """
    decodes = 1  # the document node
    aliased = 0
    # (node, alias depth, whether this entry is the alias node itself)
    stack: list[tuple[Node, int, bool]] = [(root, 0, False)]
    while stack:
        node, depth, via_alias = stack.pop()
        decodes += 1
        if depth:
            aliased += 1
        if aliased > 100 and decodes > 1000 and aliased / decodes > _allowed_alias_ratio(decodes):
            raise yaml.YAMLError("yaml: document contains excessive aliasing")
        if via_alias:
            stack.append((node, depth + 1, False))
            continue
        children: list[Node]
        if isinstance(node, MappingNode):
            children = []
            for key, value in node.value:
                children.append(key)
                children.append(value)
        elif isinstance(node, SequenceNode):
            children = list(node.value)
        else:
            continue
        merge_keys = {
            2 * i
            for i, (key, _) in enumerate(node.value if isinstance(node, MappingNode) else ())
            if key.tag == _MERGE_TAG
        }
        for ordinal in range(len(children) - 1, -1, -1):
            if ordinal in merge_keys:
                continue  # go-yaml merges the value without decoding the << key
            child = children[ordinal]
            stack.append((child, depth, (id(node), ordinal) in aliases))
