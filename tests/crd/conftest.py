"""The envtest suite's deselection by server, for the tests here that start an API server.

Tests marked ``needs_builtin_kinds`` (kubectl, which needs kube-apiserver's own ``/api``)
are deselected when ``KUBEBUILDER_ASSETS`` names the CRD-only server, as in tests/envtest.
"""

from tests.envtest.conftest import pytest_collection_modifyitems

__all__ = ["pytest_collection_modifyitems"]
