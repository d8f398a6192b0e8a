"""The registry: what each verb does to stored objects, per resource type.

kube-apiserver's generic registry (``k8s.io/apiserver/pkg/registry/generic/registry``,
``Store``) runs create, update, patch and delete for every resource; each type brings
its rules (``pkg/registry/<group>/<kind>/strategy.go``): defaults, validation, status
reset, immutable fields, its own delete. `generic` is the Store's face (`API`), with its
parts beside it: `writes` (create, update, patch: ``GuaranteedUpdate``), `deletion`
(graceful deletion, finalizers, propagation), `listing` (selectors and paging), `admit`
(admission calls), `apply` (server-side apply), `decoding`, `conversion` and `scale`.
`rest` is the strategy interface, `strategies` which type has which; the per-type
strategies live in `core`, `batch` and `apiextensions` as kube-apiserver's do, with
`defaults` and `validation` holding the built-in types' defaulting and validation
(``validation`` is a package: ``meta`` for ObjectMeta, ``core``, ``service``, ``events``,
``apps`` per group, as ``pkg/apis/<group>/validation``).
`eviction` is the ``pods/eviction`` sub-resource.
"""
