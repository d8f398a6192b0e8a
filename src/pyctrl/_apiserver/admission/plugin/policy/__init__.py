"""Admission policies: ValidatingAdmissionPolicy and MutatingAdmissionPolicy, enforced in-process.

kube-apiserver validates and mutates writes with CEL expressions stored in
``admissionregistration.k8s.io/v1`` objects, without calling out to a webhook: a policy
(``ValidatingAdmissionPolicy``, ``MutatingAdmissionPolicy``) says what to check or change
and for which requests (``matchConstraints``); a binding
(``ValidatingAdmissionPolicyBinding``, ``MutatingAdmissionPolicyBinding``) puts it to work,
optionally narrowed (``matchResources``) and with parameters (``paramRef``), and, for a
validating policy, says what a failed validation does (``validationActions``).

This package is that admission plugin for the embedded server
(``k8s.io/apiserver/pkg/admission/plugin/policy``):

- `matching`: ``matchConstraints`` and ``matchResources``;
- `params`: a binding's parameter objects, read live from the store;
- `generic`: what both kinds share: bindings, the policy-binding-param invocations;
- `validating` and `mutating`: the two kinds of policy; `typechecking`: the
  ValidatingAdmissionPolicy status' expression warnings;
- `plugin`: `PolicyPlugin`, the server's `AdmissionHook`, first in its admission list.

The CEL environment (``object``, ``oldObject``, ``request``, ``params``,
``namespaceObject``, ``authorizer``, ``variables``) and ``matchConditions``, shared with
the webhooks, are `pyctrl._apiserver.admission.plugin.cel`.
"""
