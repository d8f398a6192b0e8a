"""The policy group's kinds (kube-apiserver's pkg/registry/policy)."""
