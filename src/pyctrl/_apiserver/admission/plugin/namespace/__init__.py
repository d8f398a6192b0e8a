"""The namespace admission plugins, as ``k8s.io/apiserver/pkg/admission/plugin/namespace``."""
