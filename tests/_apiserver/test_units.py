"""Pure helpers of the embedded server: selectors, JSONPath, durations, protobuf, store."""

from __future__ import annotations

import pytest

from pyctrl._apiserver.apimachinery import jsonpath as _jsonpath
from pyctrl._apiserver.apimachinery.fields import (
    SelectorError,
    parse_field_selector,
    parse_label_selector,
    selector_from_object,
)
from pyctrl._apiserver.endpoints import protobuf as _protobuf
from pyctrl._apiserver.registry.printing import human_duration
from pyctrl._apiserver.storage.store import Store, TooOld


@pytest.mark.parametrize(
    ("text", "labels", "selected"),
    [
        ("a=b", {"a": "b"}, True),
        ("a=b", {"a": "c"}, False),
        ("a!=b", {}, True),
        ("a in (x, y)", {"a": "y"}, True),
        ("a notin (x)", {"a": "x"}, False),
        ("a", {"a": ""}, True),
        ("!a", {"a": ""}, False),
        ("a,b=c", {"a": "1", "b": "c"}, True),
        ("n>3", {"n": "10"}, True),
        ("n<3", {"n": "10"}, False),
        ("", {"anything": "x"}, True),
    ],
)
def test_label_selector_matching(text: str, labels: dict[str, str], selected: bool) -> None:
    """Each label selector operator selects as Kubernetes' labels package does."""
    assert parse_label_selector(text).matches(labels) is selected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a in (b", "unable to parse requirement: found '', expected: ',' or ')'"),
        ("a b", "found 'b', expected: in, notin, =, ==, !=, gt, lt"),
        ("!a=b", "found '=', expected: ',' or 'end of string'"),
        ("a=b,", "found '', expected: identifier after ','"),
        ("a in ()", "for 'in', 'notin' operators, values set can't be empty"),
        ("-a=b", "name part must consist of alphanumeric characters"),
        ("a>x", "the value must be an integer"),
    ],
)
def test_label_selector_errors(text: str, message: str) -> None:
    """Malformed label selectors raise with the parser's wording."""
    with pytest.raises(SelectorError) as info:
        parse_label_selector(text)
    assert message in str(info.value)


def test_selector_string_form_is_sorted() -> None:
    """A LabelSelector object prints as a sorted selector string, like Scale.status.selector."""
    parsed = selector_from_object(
        {
            "matchLabels": {"b": "2", "a": "1"},
            "matchExpressions": [{"key": "c", "operator": "In", "values": ["y", "x"]}],
        }
    )
    assert str(parsed) == "a=1,b=2,c in (x,y)"


def test_field_selector_parsing_and_escapes() -> None:
    """Field selectors support =, == and != and backslash escapes."""
    sel = parse_field_selector(r"metadata.name=a\,b,status.phase!=Failed")
    assert sel.matches({"metadata.name": "a,b", "status.phase": "Running"})
    assert not sel.matches({"metadata.name": "a,b", "status.phase": "Failed"})
    with pytest.raises(SelectorError, match="can't understand"):
        parse_field_selector("nonsense")


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (".spec.replicas", [3]),
        ('.status.conditions[?(@.type=="Ready")].status', ["True"]),
        (".spec.containers[*].name", ["a", "b"]),
        (".spec.containers[1].name", ["b"]),
        (".metadata.labels['app.kubernetes.io/name']", ["web"]),
        ("{.spec.replicas}", [3]),
        (".spec.missing", []),
    ],
)
def test_jsonpath(path: str, expected: list[object]) -> None:
    """Printer-column JSONPath forms evaluate as Kubernetes JSONPath does."""
    obj = {
        "metadata": {"labels": {"app.kubernetes.io/name": "web"}},
        "spec": {"replicas": 3, "containers": [{"name": "a"}, {"name": "b"}]},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }
    assert _jsonpath.find(obj, path) == expected


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (5, "5s"),
        (119, "119s"),
        (200, "3m20s"),
        (600, "10m"),
        (3 * 3600 + 60, "3h1m"),
        (30 * 3600, "30h"),
        (3 * 86400, "3d"),
        (400 * 86400, "400d"),
        (3 * 365 * 86400, "3y"),
    ],
)
def test_human_duration(seconds: int, text: str) -> None:
    """Ages print like kubectl's duration.HumanDuration."""
    assert human_duration(seconds) == text


def test_protobuf_namespace_body_decodes() -> None:
    """A protobuf Namespace body (as kubectl create namespace sends) decodes to JSON."""

    def field(number: int, payload: bytes) -> bytes:
        return bytes([(number << 3) | 2, len(payload)]) + payload

    meta = field(1, b"demo") + field(11, field(1, b"team") + field(2, b"a"))
    namespace = field(1, meta)
    type_meta = field(1, b"v1") + field(2, b"Namespace")
    body = _protobuf.MAGIC + field(1, type_meta) + field(2, namespace)
    assert _protobuf.decode_object(body) == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "demo", "labels": {"team": "a"}},
    }


def test_store_history_window_and_state_at() -> None:
    """The store answers past states within its history and raises TooOld beyond it."""
    store = Store(history_size=2)
    key = ("", "configmaps")
    first = store.create(key, {"metadata": {"name": "a", "namespace": "n"}})
    store.create(key, {"metadata": {"name": "b", "namespace": "n"}})
    past = store.state_at(key, "n", first.rv)
    assert [o["metadata"]["name"] for o in past] == ["a"]
    for name in ("c", "d", "e"):
        store.create(key, {"metadata": {"name": name, "namespace": "n"}})
    with pytest.raises(TooOld):
        store.events_since(first.rv)
