"""pyctrl.labels: the label selector language."""

from __future__ import annotations

import pytest

from pyctrl.labels import SelectorError, everything, from_label_selector, parse


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        ("app=web", {"app": "web"}, True),
        ("app==web", {"app": "db"}, False),
        ("app!=web", {}, True),
        ("app!=web", {"app": "web"}, False),
        ("env in (prod, staging)", {"env": "staging"}, True),
        ("env in (prod)", {}, False),
        ("env notin (dev)", {}, True),
        ("env notin (dev)", {"env": "dev"}, False),
        ("canary", {"canary": ""}, True),
        ("!canary", {"canary": "yes"}, False),
        ("app=web,!canary,tier", {"app": "web", "tier": "fe"}, True),
        ("k8s.io/app=x", {"k8s.io/app": "x"}, True),
        ("empty=", {"empty": ""}, True),
    ],
)
def test_selector_matching(selector: str, labels: dict[str, str], expected: bool) -> None:
    """Each operator matches label sets as apimachinery's selectors do."""
    assert parse(selector).matches(labels) is expected


def test_selector_prints_back_to_a_parseable_string() -> None:
    """str() of a parsed selector parses to the same selector."""
    text = "app=web,tier!=db,env in (prod,staging),!canary,ready"
    assert parse(str(parse(text))) == parse(text)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("a in ()", "values set can't be empty"),
        ("=x", "found '=', expected: !, identifier, or 'end of string'"),
        ("a b", "found 'b', expected: in, notin, =, ==, !=, gt, lt"),
        ("a=b,", "found '', expected: identifier after ','"),
        ("a in (x", "found '', expected: ',' or '\\)'"),
        ("a=b c", "found 'c', expected: ',' or 'end of string'"),
        ("-bad=x", 'key: Invalid value: "-bad": name part must consist'),
        ("a=-bad", 'Invalid value: "-bad": a valid label must be an empty string'),
    ],
)
def test_bad_selectors_are_refused(bad: str, message: str) -> None:
    """A malformed selector raises SelectorError worded as kube-apiserver words it."""
    with pytest.raises(SelectorError, match=message):
        parse(bad)


def test_empty_and_mapping_selectors() -> None:
    """Empty selectors match everything; a mapping means equalities."""
    assert everything().matches({"x": "y"})
    assert everything().empty
    assert parse(None).matches(None)
    assert parse({"app": "web"}).matches({"app": "web", "x": "y"})
    assert not parse({"app": "web"}).matches({})


def test_structured_label_selector() -> None:
    """metav1.LabelSelector dicts combine matchLabels and matchExpressions."""
    selector = from_label_selector(
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "env", "operator": "In", "values": ["prod"]},
                {"key": "debug", "operator": "DoesNotExist"},
            ],
        }
    )
    assert selector.matches({"app": "web", "env": "prod"})
    assert not selector.matches({"app": "web", "env": "prod", "debug": "1"})
    assert from_label_selector(None).matches({})


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ({"key": "a", "operator": "Near"}, "not a valid label selector operator"),
        ({"key": "a", "operator": "In"}, "must be specified"),
        ({"key": "a", "operator": "Exists", "values": ["x"]}, "may not be specified"),
    ],
)
def test_structured_selector_errors(expr: dict[str, object], message: str) -> None:
    """Bad matchExpressions raise SelectorError with apimachinery's wording."""
    with pytest.raises(SelectorError, match=message):
        from_label_selector({"matchExpressions": [expr]})
