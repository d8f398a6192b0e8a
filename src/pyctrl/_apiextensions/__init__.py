"""apiextensions-apiserver's validation: CRD schemas as kube-apiserver enforces them.

This private package is shared machinery (the analogue of controller-runtime's
``pkg/internal``): `pyctrl.crd` checks the schemas it generates with it, and the embedded
API server (`pyctrl._apiserver`) validates CRDs and custom objects with it. Nothing outside
pyctrl may import it. It stands on `pyctrl._apimachinery` (field errors, Go's printing,
JSON equality); its own floors, lowest first: `goregex`, `formats`, `names`, the
CEL engine (`cel`), `nodes` (compiled schemas), `openapi` (value validation),
`objectmeta`, `listtype`, `cel_rules`, `pruning`, `structural`, `crd_validation` and
`validation` (the entry point for objects).

A CustomResourceDefinition carries one ``openAPIV3Schema`` per version. The API server
uses that schema five ways, and this module does each of them the way
apiextensions-apiserver does (``pkg/apiserver/schema``, ``pkg/apiserver/validation``,
``pkg/apis/apiextensions/validation``, with kube-openapi's ``validate`` package for the
wording of value errors):

* `structural.structural_errors` checks that a schema is *structural* and otherwise acceptable
  for a CRD (every node typed, no ``$ref``, value validations only under
  ``anyOf``/``allOf``/``oneOf``/``not``, metadata restricted to ``name`` and
  ``generateName``, list and map extensions consistent, defaults valid and pruned,
  ``x-kubernetes-validations`` rules compile).
* `pruning.prune` drops every field the schema does not specify, except under
  ``x-kubernetes-preserve-unknown-fields`` and the ``apiVersion``/``kind``/``metadata`` of
  the object root and of embedded resources (whose metadata is coerced to ObjectMeta).
* `pruning.apply_defaults` removes non-nullable nulls that have no default and fills in
  ``default`` values for missing fields, recursively (array items and
  ``additionalProperties`` included).
* `validation.validate` checks an object against the schema: types, formats, ranges, lengths,
  patterns, enums, required fields, ``anyOf``/``allOf``/``oneOf``/``not``, embedded
  resources, ``x-kubernetes-list-type`` set/map uniqueness and the CEL rules of
  ``x-kubernetes-validations``. On update (``old`` given) errors in unchanged parts of the
  object are ratcheted away, as with the ``CRDValidationRatcheting`` feature, and CEL
  transition rules (those using ``oldSelf``) run.
* `crd_validation.validate_crd` validates a whole ``apiextensions.k8s.io/v1``
  CustomResourceDefinition on create and update.

Every problem is a `pyctrl._apimachinery.field.Cause` carrying the Status cause kube-apiserver would
send: its ``reason`` (``FieldValueInvalid``...), its ``message`` (the error body, e.g.
``Unsupported value: "x": supported values: "cool", "heat"``) and its ``field`` (e.g.
``spec.ports[0].port``; ``<nil>`` where the API server reports a nil path, as it does for
object-level composite errors and for rules on the object root).

Like kube-apiserver, validation of a v1 CRD first converts it to the internal form, which
hoists a schema (and subresources, printer columns) shared by all versions to the
top level: errors in such a schema are reported under ``spec.validation.openAPIV3Schema``,
errors in per-version schemas under ``spec.versions[i].schema.openAPIV3Schema``.

Schemas are compiled once and cached by identity: treat a schema dict as immutable once
it has been used here.

Known differences from kube-apiserver: values that Go prints with ``%#v`` as Go structs
(whole CRD versions, ValidationRule structs with pointers) are rendered in a Go-like
approximation; regular expressions run on Python's ``re`` after translating the common
RE2-only syntax; uniqueness and ordering of errors follow the document order where Go
iterates maps in random order; cost limits of CEL rules are not estimated; the metadata of
the object root (name, labels, ...) is left to the caller.
"""
