"""HTTP: kube-apiserver's ``k8s.io/apiserver/pkg/endpoints`` over aiohttp.

`server` routes requests to the handlers; `patch` applies the three PATCH formats
(``endpoints/handlers/patch.go``); `table` renders ``kubectl get`` tables
(``endpoints/handlers/responsewriters`` with the table convertor); `yamlcodec` and
`protobuf` decode request bodies as ``apimachinery/pkg/runtime/serializer`` does.
"""
