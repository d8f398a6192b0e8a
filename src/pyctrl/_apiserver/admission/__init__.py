"""Admission's seams: the request every write hands to admission, and the hooks it calls.

kube-apiserver keeps these in ``k8s.io/apiserver/pkg/admission`` (``interfaces.go``):
the registry builds an admission request for each create, update and delete and calls
the mutating then the validating hooks. The webhook plugins that fill these seams
(``pkg/admission/plugin/webhook``, and a CRD's conversion webhook) are in
`pyctrl._apiserver.webhooks`, above the HTTP layer they are installed into.
"""
