"""The strategies of the core (``""``) group's types with rules of their own.

kube-apiserver's ``pkg/registry/core/<kind>``.
"""
