"""The apps group's kinds (kube-apiserver's pkg/registry/apps)."""
