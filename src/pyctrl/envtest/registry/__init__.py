"""The registry: what each verb does to stored objects, per resource type.

kube-apiserver's generic registry (``k8s.io/apiserver/pkg/registry/generic/registry``,
``Store``) runs create, update, patch and delete for every resource; each type brings
its rules (``pkg/registry/<group>/<kind>/strategy.go``): defaults, validation, status
reset, immutable fields. `generic` is the Store, `resources` the served types,
`defaults` and `validation` the per-type rules, `eviction` the ``pods/eviction``
sub-resource.
"""
