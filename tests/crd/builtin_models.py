"""Custom resources that embed kubernetes-asyncio models: kubebuilder's CronJob tutorial."""

from typing import Literal

from kubernetes_asyncio.client import (
    V1Affinity,
    V1JobTemplateSpec,
    V1LocalObjectReference,
    V1ObjectReference,
    V1PodTemplateSpec,
    V1ResourceRequirements,
    V1Toleration,
)
from pydantic import Field

from pyctrl.crd import Int32, Int64, IntOrString, Quantity
from pyctrl.meta import KubeModel, Time
from pyctrl.resource import CustomResource


class CronJobSpec(KubeModel):
    """CronJobSpec defines the desired state of CronJob.

    Attributes:
        schedule: The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron.
        starting_deadline_seconds: Optional deadline in seconds for starting the job if it
            misses scheduled time for any reason.
        concurrency_policy: Specifies how to treat concurrent executions of a Job.
        suspend: This flag tells the controller to suspend subsequent executions.
        job_template: Specifies the job that will be created when executing a CronJob.
    """

    schedule: str
    starting_deadline_seconds: Int64 | None = None
    concurrency_policy: Literal["Allow", "Forbid", "Replace"] = "Allow"
    suspend: bool | None = None
    job_template: V1JobTemplateSpec
    successful_jobs_history_limit: Int32 | None = None
    failed_jobs_history_limit: Int32 | None = None


class CronJobStatus(KubeModel):
    """CronJobStatus defines the observed state of CronJob.

    Attributes:
        active: A list of pointers to currently running jobs.
        last_schedule_time: Information when was the last time the job was successfully
            scheduled.
    """

    active: list[V1ObjectReference] | None = None
    last_schedule_time: Time | None = None


class CronJob(CustomResource, group="batch.tutorial.kubebuilder.io", version="v1"):
    """CronJob is the Schema for the cronjobs API."""

    spec: CronJobSpec
    status: CronJobStatus = Field(default_factory=CronJobStatus)


class WorkerSpec(KubeModel):
    """What most operators embed: a pod template and scheduling constraints."""

    template: V1PodTemplateSpec
    resources: V1ResourceRequirements | None = None
    tolerations: list[V1Toleration] = Field(default_factory=list)
    affinity: V1Affinity | None = None
    image_pull_secrets: list[V1LocalObjectReference] = Field(default_factory=list)
    memory: Quantity = "128Mi"
    port: IntOrString = "http"


class Worker(CustomResource, group="pool.example.com", version="v1"):
    """Worker runs pods from its template."""

    spec: WorkerSpec
