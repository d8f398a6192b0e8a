"""pyctrl.crd properties: generated schemas are structural and accept what the model accepts."""

from __future__ import annotations

import datetime
import itertools
from dataclasses import dataclass
from typing import Annotated, Any, Literal, get_args

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import Field, create_model

from pyctrl._apiextensions.validation import validate
from pyctrl.crd import IntOrString, schema_for, structural_errors
from pyctrl.meta import KubeModel, Time

_names = itertools.count()


@dataclass(frozen=True)
class Node:
    """A type annotation and a strategy for values the type accepts."""

    annotation: Any
    values: st.SearchStrategy[Any]


_TIMES = st.datetimes(
    min_value=datetime.datetime(1970, 1, 1),
    max_value=datetime.datetime(2100, 1, 1),
    timezones=st.just(datetime.UTC),
)
_KEYS = st.text(alphabet="abcxyz", min_size=1, max_size=3)

LEAVES = st.sampled_from(
    [
        Node(str, st.text(max_size=5)),
        Node(int, st.integers(-(10**9), 10**9)),
        Node(float, st.floats(allow_nan=False, allow_infinity=False, width=32)),
        Node(bool, st.booleans()),
        Node(Time, _TIMES),
        Node(Literal["a", "b"], st.sampled_from(["a", "b"])),
        Node(IntOrString, st.one_of(st.integers(0, 100), st.text(max_size=3))),
        Node(Annotated[int, Field(ge=0, le=100)], st.integers(0, 100)),
        Node(
            Annotated[str, Field(max_length=4, pattern="^[a-z]*$")],
            st.from_regex("^[a-z]{0,4}$", fullmatch=True),
        ),
    ]
)


def _list(node: Node) -> Node:
    return Node(list[node.annotation], st.lists(node.values, max_size=3))  # type: ignore[name-defined]


def _dict(node: Node) -> Node:
    return Node(
        dict[str, node.annotation],  # type: ignore[name-defined]
        st.dictionaries(_KEYS, node.values, max_size=3),
    )


def _optional(node: Node) -> Node:
    return Node(node.annotation | None, st.one_of(st.none(), node.values))


def _model(nodes: list[Node]) -> Node:
    fields: dict[str, Any] = {f"field_{i}": (n.annotation, ...) for i, n in enumerate(nodes)}
    model = create_model(f"Generated{next(_names)}", __base__=KubeModel, **fields)
    values = st.fixed_dictionaries({f"field_{i}": n.values for i, n in enumerate(nodes)})
    return Node(model, values)


def _extend(children: st.SearchStrategy[Node]) -> st.SearchStrategy[Node]:
    return st.one_of(
        # Optional enum items are refused by design (see test_errors).
        children.filter(lambda n: not _is_optional_enum(n)).map(_list),
        children.filter(lambda n: not _is_optional_enum(n)).map(_dict),
        children.filter(lambda n: not _is_optional(n)).map(_optional),
        st.lists(children, min_size=1, max_size=3).map(_model),
    )


def _is_optional(node: Node) -> bool:
    return type(None) in get_args(node.annotation)


def _is_optional_enum(node: Node) -> bool:
    return _is_optional(node) and "Literal" in repr(node.annotation)


TYPES = st.recursive(LEAVES, _extend, max_leaves=6)


def _holder(node: Node) -> type[KubeModel]:
    return create_model(f"Holder{next(_names)}", __base__=KubeModel, value=(node.annotation, ...))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_generated_schema_is_structural(data: st.DataObject) -> None:
    """For random nestings of lists, dicts, Optionals and models, the schema is structural."""
    node = data.draw(TYPES)
    assert structural_errors(schema_for(_holder(node))) == []


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_schema_accepts_every_object_the_model_accepts(data: st.DataObject) -> None:
    """Whatever the model validates, dumped to the wire, passes the generated schema."""
    node = data.draw(TYPES)
    holder = _holder(node)
    schema = schema_for(holder)
    wire = holder.model_validate({"value": data.draw(node.values)}).to_dict()
    assert validate(wire, schema) == []
