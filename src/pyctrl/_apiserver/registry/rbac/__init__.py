"""The rbac.authorization.k8s.io group's kinds (kube-apiserver's pkg/registry/rbac)."""
