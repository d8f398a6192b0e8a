"""Admission policies: validation and defaulting in the API server, declared in Python.

Kubernetes validates (``ValidatingAdmissionPolicy``) and mutates
(``MutatingAdmissionPolicy``) objects inside the API server with CEL expressions: no
webhook to run, no certificate, no availability risk. This package declares them next
to the types, as `pyctrl.crd` declares CRDs, and ``pyctrl generate`` writes them with
the other manifests (``config/policy/``)::

    port_range = ValidatingPolicy(
        name="mysrv-port-range",
        for_=MySrv,
        validations=[required("spec.name"), in_range("spec.port", 1, 65535)],
    )

    operator = Operator(name="mysrv", types=[MySrv], setup=setup, policies=[port_range])

- `ValidatingPolicy`: CEL `Validation` rules (message, ``messageExpression``, reason),
  the match (``for_`` gives the resource rules; operations, namespace and object
  selectors, ``exclude``, explicit ``rules``), match conditions (`MatchCondition`, the
  webhooks' own), variables (`Variable`), audit annotations (`AuditAnnotation`),
  ``failure_policy``, params from a custom resource or a ConfigMap (``params=``), and
  bindings (`Binding`: a `ParamRef`, the validation actions ``Deny``, ``Warn``,
  ``Audit``, selectors). `ValidatingPolicy.evaluate` runs the CEL here on JSON objects
  (a unit test without a server); `ValidatingPolicy.validator` serves the same typed
  rules from a webhook.
- `MutatingPolicy`: mutations (`Mutation`: ``ApplyConfiguration`` or ``JSONPatch``),
  with the same match, params and bindings.
- Typed helpers write the common rules, each with a message and its Python twin:
  `required`, `immutable`, `in_range`, `at_most`, `at_least` (bounds may be a `param`
  field), `matches`, `one_of`, `label_required`; `set_default` is a mutation.

Every expression is type-checked when the manifests are made, against the kinds'
schemas (a CRD's, or the built-in kind's published OpenAPI), in kube-apiserver's policy
environment (``object``, ``oldObject``, ``request``, ``params``, ``namespaceObject``,
``variables``, ``authorizer``): an error is a `PolicyError` naming the policy and the
expression (``policy "mysrv-port-range" validations[1]: undefined field 'prot'``).
In mutations, the values inside ``Object{...}`` are checked, the constructed field
names are not; ``authorizer`` is dynamic.

`policy_manifests` gives the objects; `params_role` the ClusterRole that may edit the
params (kube-apiserver reads them itself; whoever creates a policy or binding needs
``get`` on the param kind).
"""

from __future__ import annotations

from pyctrl.policy._manifests import params_role, policy_manifests
from pyctrl.policy._policy import MutatingPolicy, PolicyValidator, ValidatingPolicy
from pyctrl.policy._rules import (
    Param,
    at_least,
    at_most,
    immutable,
    in_range,
    label_required,
    matches,
    one_of,
    param,
    required,
    set_default,
)
from pyctrl.policy._types import (
    VALIDATION_ACTIONS,
    AuditAnnotation,
    Binding,
    Evaluation,
    Mutation,
    ParamRef,
    PolicyError,
    ResourceRule,
    Validation,
    Variable,
)
from pyctrl.webhook import MatchCondition

__all__ = [
    "VALIDATION_ACTIONS",
    "AuditAnnotation",
    "Binding",
    "Evaluation",
    "MatchCondition",
    "MutatingPolicy",
    "Mutation",
    "Param",
    "ParamRef",
    "PolicyError",
    "PolicyValidator",
    "ResourceRule",
    "ValidatingPolicy",
    "Validation",
    "Variable",
    "at_least",
    "at_most",
    "immutable",
    "in_range",
    "label_required",
    "matches",
    "one_of",
    "param",
    "params_role",
    "policy_manifests",
    "required",
    "set_default",
]
