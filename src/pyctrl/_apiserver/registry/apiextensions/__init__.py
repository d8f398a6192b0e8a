"""The strategies of apiextensions-apiserver (``apiextensions-apiserver/pkg/registry``).

CustomResourceDefinitions, and the custom resources they define.
"""
