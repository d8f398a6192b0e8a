"""Admission, as kube-apiserver's ``k8s.io/apiserver/pkg/admission``.

The registry builds an admission request for each create, update and delete and runs
the mutating then the validating hooks:

- `interfaces`: the request every write hands to admission, the hook and conversion
  seams, and what plugins read of the server (``admission/interfaces.go``);
- `chain`: the hooks run in order on a write (``admission/chain.go``);
- `plugin.namespace.lifecycle`: NamespaceLifecycle, no new object in a missing or
  terminating namespace (``plugin/namespace/lifecycle``);
- `plugin.webhook`: the mutating and validating webhook dispatch
  (``plugin/webhook/{mutating,validating}``).

A CRD's conversion webhook is `pyctrl._apiserver.conversion.webhook`, as
apiextensions-apiserver keeps it; `pyctrl._apiserver.options.install` plugs both into a
server.
"""
