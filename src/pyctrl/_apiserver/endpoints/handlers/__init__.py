"""The REST handlers: k8s.io/apiserver's ``endpoints/handlers``, one module per verb family.

`rest` holds what every handler shares (the `rest.Scope` they serve from, body reading,
write options), `decode` decodes bodies as kube-apiserver's codecs do; `get` answers get
and list, `watch` streams watches, `create`, `update`, `patch` and `delete` write. Each
handler takes the scope, the aiohttp request and the routed
`pyctrl._apiserver.endpoints.request.Target`, and returns the response or raises a
`pyctrl._apiserver.apimachinery.errors.StatusError`.
"""
