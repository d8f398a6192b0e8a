"""The networking.k8s.io group's kinds (kube-apiserver's pkg/registry/networking)."""
