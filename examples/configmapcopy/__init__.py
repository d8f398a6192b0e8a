"""The ConfigMap copier: a multi-cluster operator copying the hub's ConfigMaps to a fleet."""
