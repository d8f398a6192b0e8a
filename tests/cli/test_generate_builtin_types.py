"""A pyctrl project whose CronJob embeds V1JobTemplateSpec: `pyctrl generate crd`, then apply."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest

from pyctrl.envtest import Environment
from tests.kubectl import Kubectl

if TYPE_CHECKING:
    from .conftest import Workspace

CRONJOB_API = """
from kubernetes_asyncio.client import V1JobTemplateSpec

from pyctrl.meta import KubeModel
from pyctrl.resource import CustomResource


class CronJobSpec(KubeModel):
    schedule: str
    job_template: V1JobTemplateSpec


class CronJob(CustomResource, group="batch.tutorial.kubebuilder.io", version="v1"):
    spec: CronJobSpec
"""

BAD_JOB = """
apiVersion: batch.tutorial.kubebuilder.io/v1
kind: CronJob
metadata: {name: bad}
spec:
  schedule: "@daily"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{name: c, image: busybox, ports: [{containerPort: http}]}]
"""


@pytest.mark.needs_builtin_kinds  # kubectl's discovery needs /api, which CRD-only servers lack
async def test_generated_crd_validates_the_job_template_at_apply(workspace: Workspace) -> None:
    """`generate crd` of a module with a V1JobTemplateSpec field gives a CRD that checks Jobs."""
    workspace.module("cronjob_api", CRONJOB_API)
    result = await asyncio.to_thread(workspace.invoke, "generate", "crd", "cronjob_api")
    assert result.exit_code == 0, result.output
    crd_file = workspace.root / "config" / "crd" / "cronjobs.batch.tutorial.kubebuilder.io.yaml"
    async with Environment() as env:
        kubectl = Kubectl(env.kubeconfig_path, workspace.root / "cache", "default")
        await kubectl("apply", "-f", str(crd_file))
        refused = await kubectl("apply", "-f", "-", stdin=BAD_JOB, check=False)
        assert refused.code != 0
        assert (
            "spec.jobTemplate.spec.template.spec.containers[0].ports[0].containerPort"
            in refused.err
        )
        good = BAD_JOB.replace("containerPort: http", "containerPort: 8080")
        await kubectl("apply", "-f", "-", stdin=good)
