"""The embedded Kubernetes API server: kube-apiserver written in Python, private.

`pyctrl.envtest` (the test harness, controller-runtime's ``pkg/envtest``) starts it; no
user imports it. It is laid out as kube-apiserver is, one subpackage per part, each
importing only the parts below it (an import-linter contract checks the floors, another
that the server never imports the runtime: client, cache, controller, manager, builder,
webhook, nor the harness):

- `endpoints`: the `APIServer` (listener, lifecycle), filters, routing, one handler module
  per verb family, content negotiation (``apiserver/pkg/endpoints``);
- `webhooks`: the admission webhook plugin and CRD conversion webhooks
  (``apiserver/pkg/admission/plugin/webhook``, apiextensions' ``conversion``);
- `openapi`, `discovery`: the API documents;
- `authorization`, `authentication`: RBAC and SubjectAccessReview; tokens and TokenReview;
- `controllers`: garbage collector, namespace cleanup, CRD naming and establishing;
- `registry`: the Store and one strategy per kind (``pkg/registry/<group>/<kind>``);
- `admission`: what the registry hands admission and the hooks it calls;
- `fieldmanager`: managedFields, server-side apply and patches;
- `storage`: objects in memory, history and watch fan-out;
- `faults`: fault injection;
- `apimachinery`: ``Status`` errors, field selectors, JSONPath.

See docs/architecture.md for the floors and their kube-apiserver counterparts.
"""
