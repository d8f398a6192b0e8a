"""HTTP: kube-apiserver's ``k8s.io/apiserver/pkg/endpoints`` over aiohttp.

`server` holds `APIServer` (construction, listener, lifecycle); a request goes through
`filters` (authentication, authorization, error recovery; ``endpoints/filters``), then
`installer` (path to resource and verb; ``endpoints/installer.go`` and the mux), then one of
`handlers` (``endpoints/handlers``: get and list, watch, create, update, patch, delete).
`negotiation` picks request decoders and answer encodings, `responsewriters` writes
answers and ``Status`` errors, `request` carries the user and routed target. `table`
renders ``kubectl get`` tables (the table convertor); `yamlcodec` and `protobuf` decode
request bodies as ``apimachinery/pkg/runtime/serializer`` does.
"""
