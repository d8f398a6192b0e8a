"""The autoscaling group's kinds (kube-apiserver's pkg/registry/autoscaling)."""
