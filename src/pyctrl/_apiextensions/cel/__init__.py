"""CEL for ``x-kubernetes-validations``: compile once, evaluate fast, as kube-apiserver.

A CustomResourceDefinition may attach rules written in the Common Expression Language
to any schema node (``x-kubernetes-validations``). Each rule sees the node's value as
``self`` and, in a transition rule, its previous value as ``oldSelf``; it must return
``true`` for the object to be accepted. This module compiles such rules and evaluates
them on decoded JSON values.

Parsing uses cel-python's (``celpy``) grammar. Type checking and evaluation are our own:
the rules are checked against the schema (as kube-apiserver types ``self`` from the
schema: undefined fields, undeclared identifiers and functions, non-boolean results are
compilation errors) and compiled into Python closures that work directly on the JSON
values, without converting the object first. A compiled program costs a few
microseconds to run, so validating thousands of objects stays fast; programs are cached
per rule text and schema node.

Values follow CEL's types: ``int`` (64-bit, overflow is an error), ``uint``, ``double``,
``bool``, ``string``, ``bytes``, ``list``, ``map``, ``null_type``, ``timestamp`` and
``duration`` (strings with ``format: date-time``/``date``/``duration`` in the schema
become timestamps and durations, ``format: byte`` strings become bytes, ``number`` fields
become doubles), plus the Kubernetes library types ``quantity``, ``URL``, ``IP`` and
``CIDR``. Equality is heterogeneous for numbers (``1 == 1.0``), errors inside ``&&``,
``||``, ``all`` and ``exists`` are absorbed when the other operands decide the result, as
in cel-go.

Supported beyond the core language (operators, ``has``, ``all``, ``exists``,
``exists_one``, ``map`` (two and three arguments), ``filter``, ``size``, ``in``, type
conversions ``int``/``uint``/``double``/``string``/``bytes``/``bool``/``timestamp``/
``duration``/``dyn``/``type``, ``contains``/``startsWith``/``endsWith``/``matches``,
timestamp and duration accessors):

* strings extension: ``charAt``, ``indexOf``, ``lastIndexOf``, ``lowerAscii``,
  ``upperAscii``, ``replace``, ``split``, ``substring``, ``trim``, ``join``, ``reverse``;
* Kubernetes lists: ``isSorted``, ``sum``, ``min``, ``max``, ``indexOf``,
  ``lastIndexOf``;
* Kubernetes regex: ``find``, ``findAll``;
* Kubernetes URLs: ``url``, ``isURL``, ``getScheme``, ``getHost``, ``getHostname``,
  ``getPort``, ``getEscapedPath``, ``getQuery``;
* Kubernetes quantities: ``quantity``, ``isQuantity``, ``sign``, ``isInteger``,
  ``asInteger``, ``asApproximateFloat``, ``add``, ``sub``, ``compareTo``,
  ``isGreaterThan``, ``isLessThan``;
* Kubernetes IP/CIDR: ``ip``, ``isIP``, ``cidr``, ``isCIDR``, ``ip.isCanonical``,
  ``family``, ``isUnspecified``, ``isLoopback``, ``isLinkLocalMulticast``,
  ``isLinkLocalUnicast``, ``isGlobalUnicast``, ``containsIP``, ``containsCIDR``,
  ``masked``, ``prefixLength`` and ``ip()`` of a CIDR;
* sets: ``sets.contains``, ``sets.equivalent``, ``sets.intersects``;
* math: ``math.greatest``, ``math.least``;
* optionals as used with ``optionalOldSelf``: ``optional.of``, ``optional.none``,
  ``optional.ofNonZeroValue``, ``hasValue``, ``value``, ``orValue``, ``or``.

Not supported (a rule using them fails to compile, with cel-go's "undeclared reference"
wording, or fails to parse): the optional field/index syntax ``.?field`` and ``[?key]``,
the Kubernetes ``format`` library (``format.dns1123Label()`` ...), ``semver``, the
``strings.quote`` and ``string.format`` functions, two-variable comprehensions
(``all(k, v, ...)``, ``transformMap`` ...), ``authorizer``, message construction
(``Type{field: ...}``), protobuf types other than the well-known timestamp and duration,
and CEL cost estimation and limits (no rule is rejected for being too expensive).
Compile-time overload resolution covers operators and the string methods; for other
functions an argument of the wrong type is reported at evaluation time (``no such
overload``) rather than on CRD create, where cel-go would already refuse the rule.
"""

from __future__ import annotations

from pyctrl._apiextensions.cel.program import (
    CompiledRule,
    Program,
    compile_env,
    compile_expression,
    compile_rules,
)
from pyctrl._apiextensions.cel.types import DYN, T, schema_type
from pyctrl._apiextensions.cel.values import CelCompileError, CelEvalError, parse_quantity

__all__ = [
    "DYN",
    "CelCompileError",
    "CelEvalError",
    "CompiledRule",
    "Program",
    "T",
    "compile_env",
    "compile_expression",
    "compile_rules",
    "parse_quantity",
    "schema_type",
]
