"""Admission: the seams every write passes through, and the webhooks that extend them.

kube-apiserver keeps these in ``k8s.io/apiserver/pkg/admission`` (``interfaces.go``) and
``pkg/admission/plugin/webhook`` (mutating and validating webhooks); the conversion
webhook of a CRD (``apiextensions-apiserver/pkg/apiserver/conversion``) is called the same
way and lives in `webhooks` too.
"""
