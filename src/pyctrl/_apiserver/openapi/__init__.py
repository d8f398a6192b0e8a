"""The OpenAPI documents the server publishes (``/openapi/v2`` and ``/openapi/v3``).

`builder` assembles the documents for built-in kinds (their schemas from
`pyctrl._apiserver.scheme.builtin`) and CRDs, as ``k8s.io/kube-openapi`` and
apiextensions-apiserver's ``controller/openapi`` do; `protobuf` encodes the v2 document
as gnostic's protobuf, which client-go asks for.
"""
