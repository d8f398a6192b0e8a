"""The API server's acceptance check of one CRD schema, without an API server."""

from __future__ import annotations

from typing import Any


def structural_errors(
    schema: dict[str, Any], path: str = "spec.validation.openAPIV3Schema"
) -> list[str]:
    """What kube-apiserver would refuse in an ``openAPIV3Schema``, as it words it.

    The checks are apiextensions-apiserver's on CRD create: the schema is structural
    (every node typed unless ``x-kubernetes-int-or-string`` or
    ``x-kubernetes-preserve-unknown-fields``, no ``$ref``, ``anyOf``/``allOf``/``oneOf``/
    ``not`` only with value validations, root ``metadata`` restricted to ``name`` and
    ``generateName``), list and map extensions are consistent, defaults are valid and
    pruned, and every ``x-kubernetes-validations`` rule compiles. Generated schemas
    (`schema_for`) pass; use it on schemas you write or edit by hand.

    Args:
        schema: The ``openAPIV3Schema`` dict (treat it as immutable afterwards: compiled
            schemas are cached by identity).
        path: Field path of the schema in its CRD, the prefix of every message. The
            default is where kube-apiserver reports a schema that all versions share;
            a per-version schema is at ``spec.versions[i].schema.openAPIV3Schema``.

    Returns:
        One ``<field>: <error>`` message per problem, in kube-apiserver's order; empty
        when the API server would accept the schema.
    """
    # The schema engine and its CEL compiler load on first use: `import pyctrl.crd`,
    # which only generates, stays light.
    from pyctrl._apiextensions.structural import structural_errors as causes

    return [str(cause) for cause in causes(schema, path)]
