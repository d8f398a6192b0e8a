"""The strategies of the ``batch`` group's types with rules of their own.

kube-apiserver's ``pkg/registry/batch/<kind>``.
"""
