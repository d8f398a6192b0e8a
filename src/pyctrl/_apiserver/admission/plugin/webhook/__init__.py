"""Admission and conversion webhooks, called by the embedded API server as kube-apiserver does.

A cluster extends its API server with webhooks: HTTPS endpoints that kube-apiserver calls
while it serves a request. *Mutating admission webhooks* (MutatingWebhookConfiguration)
may change an object before it is validated and stored, by answering with a JSON patch;
*validating admission webhooks* (ValidatingWebhookConfiguration) may deny a write, with a
``Status`` the client sees; both may add warnings, which reach the client as
``Warning: 299 - "<text>"`` response headers (kubectl prints them). A
CustomResourceDefinition whose ``spec.conversion.strategy`` is ``Webhook`` has its
objects converted between versions by a *conversion webhook* (ConversionReview).

This package makes the embedded API server do the same, so that webhooks written with
`pyctrl.webhook` (or any other webhook server) run end to end in tests and under
``kubectl``:

- `dispatcher.WebhookDispatcher` is the server's `AdmissionHook`: on every write it reads the
  stored webhook configurations (parsed once per resourceVersion), picks the webhooks
  whose rules, ``namespaceSelector`` and ``objectSelector`` match, sends each an
  ``admission.k8s.io/v1`` AdmissionReview (``v1beta1`` when that is all the webhook
  accepts) and applies the answers;
- `pyctrl._apiserver.conversion.webhook.WebhookConverter` is the server's `ConversionHook`
  for CRDs with a Webhook strategy (apiextensions-apiserver's ``pkg/apiserver/conversion``);
- `pyctrl._apiserver.options.install` plugs both into an `APIServer`.

The modules: `client` (the HTTPS call, as ``k8s.io/apiserver/pkg/util/webhook``),
`config` (parsed configurations, rule matching, the answer's checks, as
``plugin/webhook/{config,predicates,request}``), `dispatcher` (the mutating and
validating dispatch, as ``plugin/webhook/{mutating,validating}``).

What kube-apiserver does, and so this module (k8s.io/apiserver
pkg/admission/plugin/webhook, apiextensions-apiserver pkg/apiserver/conversion):

- Configurations are taken in name order, webhooks in their order within one.
  Webhook configuration objects themselves (and admission policies) are never sent
  to webhooks, so a broken webhook cannot lock its own configuration.
- Rules match on ``operations``, ``apiGroups``, ``apiVersions``, ``resources`` (``*``,
  ``pods/status``, ``*/status``, ``pods/*``) and ``scope`` (a Namespace object counts as
  cluster-scoped). With ``matchPolicy: Equivalent`` (the default) a rule written for
  another version of the same resource also matches: the object is converted to that
  version for the webhook (through the conversion webhook for such CRDs) and, for a
  mutating webhook, the patched object converted back.
- ``namespaceSelector`` matches the labels of the request's namespace (for a Namespace
  object, its own labels); cluster-scoped objects always match. ``objectSelector``
  matches the labels of the new or the old object.
- Mutating webhooks run one after another; each answer's base64 JSON patch is applied
  to the object. ``reinvocationPolicy: IfNeeded``: when a later webhook changed the
  object, the earlier IfNeeded webhooks that were called run once more (one extra
  round, as kube-apiserver's admission chain does; built-in admission plugins do not
  exist here, so only webhook changes count).
- Validating webhooks run concurrently; the first denial (in completion order) is
  what the client gets.
- A denial is the webhook's ``Status`` with its message prefixed by
  ``admission webhook "<name>" denied the request: ``; a code below 400 becomes 400
  (kube-apiserver 1.32; newer releases answer 403 and prefix the resource and name).
- A failed call (connection refused, TLS error, timeout, non-2xx answer, malformed
  review) is subject to ``failurePolicy``: ``Fail`` (default) answers 500
  ``Internal error occurred: failed calling webhook "<name>": failed to call webhook:
  Post "<url>?timeout=10s": ...``; ``Ignore`` skips the webhook (logged).
- ``timeoutSeconds`` (default 10) bounds each call; the URL carries ``?timeout=Ns``.
- On a dry-run request a webhook whose ``sideEffects`` is not ``None`` or
  ``NoneOnDryRun`` makes the request fail with 400 ``admission webhook "<name>" does
  not support dry run``.
- Warnings in answers are added to the response. The server's write path takes them
  from ``request.warnings`` when the `AdmissionRequest` carries such a list; on a
  denial they also go into the error's ``Warning`` header.
- The server certificate is verified against ``caBundle`` (the system roots without
  one). ``clientConfig.url`` is the usual envtest case. A ``service`` cannot be reached
  without cluster DNS: `install` takes ``services``, a map from ``"<namespace>/<name>"``
  to a base URL (``https://127.0.0.1:9443``); the certificate is still checked for the
  Service's name ``<name>.<namespace>.svc``, as in a cluster. An unmapped Service fails
  like an unresolvable host, with a hint.
- Conversion sends only objects not yet at the desired version, checks the answer
  (uid, count, apiVersion, kind, name, namespace, uid of every object), keeps the
  original metadata except labels and annotations, and fails the request with 500
  ``conversion webhook for <group/version>, Kind=<Kind> failed: ...``. The call is
  bounded at 30 seconds (kube-apiserver's webhook client timeout).

``matchConditions`` are CEL expressions (``object``, ``oldObject``, ``request``,
``authorizer``; `pyctrl._apiserver.admission.plugin.cel`) evaluated once the rules and
selectors match: one false skips the webhook; an error with none false skips it under
``failurePolicy: Ignore`` and fails the request under ``Fail`` with 403 ``<resource>
"<name>" is forbidden: expression '<e>' resulted in error: <error>``.

Not done: webhook configurations are not
validated when stored (kube-apiserver rejects, for instance, ``sideEffects: Some`` in
``admissionregistration.k8s.io/v1``); such values are honoured here as far as they
make sense. Each call opens a fresh connection (no keep-alive), which costs a TLS
handshake per call.
"""
