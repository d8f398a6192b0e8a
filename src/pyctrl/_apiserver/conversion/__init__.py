"""Conversion of custom resources between versions.

As apiextensions-apiserver's ``pkg/apiserver/conversion``.

The ``None`` strategy (only ``apiVersion`` changes) is the registry's
(`pyctrl._apiserver.registry.conversion`); `webhook` calls a CRD's conversion webhook.
"""
