"""The scheme: which resource types the server serves, and the schema of each built-in kind.

kube-apiserver knows its built-in types from Go (``k8s.io/api`` registered in a
``runtime.Scheme``) and serves them through storage configured per group and resource.
`resourcetype` describes one served REST resource (group, version, scope, verbs, storage,
printer columns); `resources` keeps the registry of them, CRDs' included; `builtin_types`
lists the built-in resources, one table per API group; `builtin` derives each built-in
kind's structural schema from kubernetes_asyncio's generated models; `events` converts
Events between core/v1 and events.k8s.io/v1, which share one storage.
"""
