"""The OpenAPI documents the server publishes (``/openapi/v2`` and ``/openapi/v3``).

`builtin` derives the schemas of built-in kinds from kubernetes_asyncio's generated
models (kube-apiserver generates them from its Go types); `builder` assembles the
documents for built-in kinds and CRDs, as ``k8s.io/kube-openapi`` and
apiextensions-apiserver's ``controller/openapi`` do.
"""
