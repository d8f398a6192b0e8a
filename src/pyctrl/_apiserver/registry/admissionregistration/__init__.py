"""The admissionregistration.k8s.io kinds (kube-apiserver's pkg/registry/admissionregistration)."""
