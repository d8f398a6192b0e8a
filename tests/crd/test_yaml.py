"""pyctrl.crd.to_yaml: CRDs as YAML documents in controller-gen's layout."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from pyctrl.crd import crd_for, crds_for, to_yaml
from tests.crd.models import ClusterPool, MySrv, MySrvV1alpha1
from tests.kubectl import kubectl_path

if TYPE_CHECKING:
    from pathlib import Path


def test_document_layout_matches_controller_gen() -> None:
    """The output opens with ---, then apiVersion, kind, metadata, spec, keys sorted."""
    text = to_yaml(crd_for(ClusterPool))
    assert text.startswith(
        "---\n"
        "apiVersion: apiextensions.k8s.io/v1\n"
        "kind: CustomResourceDefinition\n"
        "metadata:\n"
        "  name: clusterpools.infra.example.com\n"
        "spec:\n"
        "  group: infra.example.com\n"
        "  names:\n"
        "    kind: ClusterPool\n"
        "    listKind: ClusterPoolList\n"
        "    plural: clusterpools\n"
        "    singular: clusterpool\n"
        "  scope: Cluster\n"
        "  versions:\n"
        "  - name: v1beta1\n"
        "    schema:\n"
        "      openAPIV3Schema:\n"
        "        description: ClusterPool is a cluster-wide pool of nodes.\n"
        "        properties:\n"
        "          apiVersion:\n"
        "            description: |-\n"
        "              APIVersion defines the versioned schema of this representation"
        " of an object.\n"
    )
    assert text.endswith("    served: true\n    storage: true\n")


def test_yaml_parses_back_to_the_crd() -> None:
    """Loading the YAML gives back exactly the CRD dict."""
    crd = crd_for(MySrvV1alpha1, MySrv)
    assert yaml.safe_load(to_yaml(crd)) == crd


def test_list_becomes_several_documents() -> None:
    """A list of CRDs renders as one document each."""
    crds = crds_for(MySrv, ClusterPool)
    text = to_yaml(crds)
    assert text.count("---\n") == 2
    assert list(yaml.safe_load_all(text)) == crds


def test_multi_line_descriptions_are_literal_blocks() -> None:
    """Descriptions with line breaks are written as |- blocks, one line per line."""
    text = to_yaml(crd_for(MySrv))
    assert (
        "                    observedGeneration:\n"
        "                      description: |-\n"
        "                        observedGeneration represents the .metadata.generation"
        " that the condition was set based upon.\n"
    ) in text


def test_enum_strings_that_look_like_booleans_stay_strings() -> None:
    """The condition status enum "True"/"False" survives as strings, not booleans."""
    loaded = yaml.safe_load(to_yaml(crd_for(MySrv)))
    schema = loaded["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    status = schema["properties"]["status"]["properties"]["conditions"]["items"]["properties"]
    assert status["status"]["enum"] == ["True", "False", "Unknown"]


def test_tuples_and_mappings_are_rendered_plainly() -> None:
    """Tuples become lists and any Mapping a plain mapping, with no Python tags."""
    text = to_yaml({"a": (1, 2), "b": {"c": ("x",)}})
    assert text == "---\na:\n- 1\n- 2\nb:\n  c:\n  - x\n"


def test_non_mappings_are_refused() -> None:
    """to_yaml refuses documents that are not mappings."""
    with pytest.raises(TypeError, match="renders dicts"):
        to_yaml(["not an object"])  # type: ignore[list-item]


async def kubectl(*args: str) -> str:
    """Run kubectl without any cluster and return its output; fail on a non-zero exit."""
    process = await asyncio.create_subprocess_exec(
        kubectl_path(),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={"KUBECONFIG": "/dev/null", "PATH": "/usr/bin:/bin"},
    )
    async with asyncio.timeout(30):
        out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    return out.decode()


async def test_kubectl_reads_every_document(tmp_path: Path) -> None:
    """kubectl decodes all documents of a multi-CRD file (label --local needs no server)."""
    path = tmp_path / "crds.yaml"
    crds = crds_for(MySrv, MySrvV1alpha1, ClusterPool)
    path.write_text(to_yaml(crds))
    names = await kubectl("label", "--local", "-f", str(path), "checked=yes", "-o", "name")
    assert names.split() == [
        f"customresourcedefinition.apiextensions.k8s.io/{c['metadata']['name']}" for c in crds
    ]


async def test_kubectl_decodes_the_crd_unchanged(tmp_path: Path) -> None:
    """kubectl's decoding of the YAML yields the same CRD spec that was generated."""
    path = tmp_path / "crd.yaml"
    crd = crd_for(MySrvV1alpha1, MySrv)
    path.write_text(to_yaml(crd))
    out = await kubectl("label", "--local", "-f", str(path), "checked=yes", "-o", "json")
    decoded: dict[str, Any] = json.loads(out)
    assert decoded["spec"] == crd["spec"]
    assert decoded["metadata"] == {**crd["metadata"], "labels": {"checked": "yes"}}
