"""A CRD embedding built-in types on a real API path: create, refuse, kubectl explain and apply.

They run against whatever `Environment()` starts: the embedded server, or the real
CRD-only server when ``KUBEBUILDER_ASSETS`` names its build.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

import pytest
from kubernetes_asyncio import client as k8s_client

from pyctrl.crd import crd_for, to_yaml
from pyctrl.envtest import Environment
from tests.crd.builtin_models import CronJob
from tests.crd.test_builtin import CRONJOB
from tests.kubectl import Kubectl

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

GROUP = "batch.tutorial.kubebuilder.io"


@pytest.fixture
async def env() -> AsyncIterator[Environment]:
    """An API server with the CronJob CRD (its Job template fully typed) installed."""
    async with Environment(crds=[crd_for(CronJob, max_description_length=200)]) as started:
        yield started


def _bad_port() -> dict[str, Any]:
    bad = copy.deepcopy(CRONJOB)
    del bad["status"]
    bad["metadata"]["name"] = "bad-port"
    container = bad["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
    container["ports"] = [{"containerPort": "eighty"}]
    return bad


async def test_crd_embedding_a_pod_template_is_served_and_validates(env: Environment) -> None:
    """The CRD is accepted; a valid CronJob is stored whole, a non-integer port refused by path."""
    good = copy.deepcopy(CRONJOB)
    del good["status"]
    async with k8s_client.ApiClient(env.config) as api:
        objects = k8s_client.CustomObjectsApi(api)
        created = await objects.create_namespaced_custom_object(
            GROUP, "v1", "default", "cronjobs", good
        )
        assert CronJob.from_dict(created).spec == CronJob.from_dict(good).spec
        with pytest.raises(k8s_client.ApiException) as refused:
            await objects.create_namespaced_custom_object(
                GROUP, "v1", "default", "cronjobs", _bad_port()
            )
    assert refused.value.status == 422
    path = "spec.jobTemplate.spec.template.spec.containers[0].ports[0].containerPort"
    assert f"{path}: Invalid value" in str(refused.value.body)
    assert "must be of type integer" in str(refused.value.body)


@pytest.mark.needs_builtin_kinds  # kubectl's discovery needs /api, which CRD-only servers lack
async def test_kubectl_explain_shows_the_nested_builtin_fields(
    env: Environment, tmp_path: Path
) -> None:
    """kubectl explain walks into the embedded Job template down to a container's ports."""
    kubectl = Kubectl(env.kubeconfig_path, tmp_path / "cache", "default")
    run = await kubectl(
        "explain",
        "cronjobs.spec.jobTemplate.spec.template.spec.containers.ports",
        f"--api-version={GROUP}/v1",
    )
    assert f"GROUP:      {GROUP}" in run.out
    assert "containerPort\t<integer> -required-" in run.out
    assert "protocol\t<string>" in run.out
    assert "Number of port to expose on the pod's IP address." in run.out


@pytest.mark.needs_builtin_kinds  # kubectl's discovery needs /api, which CRD-only servers lack
async def test_kubectl_apply_validates_the_job_of_a_cronjob(
    env: Environment, tmp_path: Path
) -> None:
    """The kubebuilder tutorial's CronJob, applied with kubectl: its Job is checked at apply."""
    kubectl = Kubectl(env.kubeconfig_path, tmp_path / "cache", "default")
    crd_file = tmp_path / "crd.yaml"
    crd_file.write_text(to_yaml(crd_for(CronJob, max_description_length=200)))
    await kubectl("apply", "-f", str(crd_file))
    refused = await kubectl("apply", "-f", "-", stdin=_bad_port(), check=False)
    assert refused.code != 0
    assert "containers[0].ports[0].containerPort" in refused.err
    good = copy.deepcopy(CRONJOB)
    del good["status"]
    await kubectl("apply", "-f", "-", stdin=good)
    stored = await kubectl.json(f"cronjobs.{GROUP}", "hello")
    assert stored["spec"]["jobTemplate"] == CRONJOB["spec"]["jobTemplate"]
