"""Admission plugins, as ``k8s.io/apiserver/pkg/admission/plugin``."""
