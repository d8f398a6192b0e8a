"""`models_for`: typed models of other projects' CRDs, checked by generating the CRD back."""

from __future__ import annotations

import copy
import sys
import types
from pathlib import Path
from typing import Any

import pytest
import yaml

from pyctrl.crd import crd_for, crds_for, models_for
from pyctrl.errors import SchemaError
from pyctrl.resource import CustomResource
from tests.crd.generated import certificates_cert_manager_io as generated
from tests.crd.generated import httproutes_gateway_networking_k8s_io as routes
from tests.crd.generated import servicemonitors_monitoring_coreos_com as monitors
from tests.crd.models import ClusterPool, MySrv, MySrvV1alpha1

FIXTURES = Path(__file__).parent / "fixtures"
# Real CRDs of other projects: fixture, generated module, samples file, kind.
THIRD_PARTY = [
    ("cert-manager.io_certificates.yaml", generated, "cert-manager-samples.yaml", "Certificate"),
    (
        "monitoring.coreos.com_servicemonitors.yaml",
        monitors,
        "servicemonitor-samples.yaml",
        "ServiceMonitor",
    ),
    ("gateway.networking.k8s.io_httproutes.yaml", routes, "httproute-samples.yaml", "HTTPRoute"),
]


def _load(name: str) -> dict[str, Any]:
    crd: dict[str, Any] = yaml.safe_load((FIXTURES / name).read_text())
    return crd


def _classes(source: str, name: str) -> list[type[CustomResource]]:
    module = types.ModuleType(name)
    sys.modules[name] = module
    try:
        exec(compile(source, f"{name}.py", "exec"), module.__dict__)
    finally:
        del sys.modules[name]
    return [
        value
        for value in vars(module).values()
        if isinstance(value, type) and issubclass(value, CustomResource)
        and value is not CustomResource
    ]  # fmt: skip


def _normalised(versions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The served versions without the root apiVersion/kind descriptions pyctrl writes."""
    out = copy.deepcopy([v for v in versions if v.get("served", True)])
    for version in out:
        root = version["schema"]["openAPIV3Schema"]["properties"]
        for key in ("apiVersion", "kind"):
            root[key].pop("description", None)
    return out


@pytest.mark.parametrize("fixture", [t[0] for t in THIRD_PARTY])
def test_third_party_models_give_the_crd_back(fixture: str) -> None:
    """Generating the CRD from the models of a real third-party CRD gives its schema back."""
    crd = _load(fixture)
    back = crd_for(
        *_classes(models_for(crd), "gen_" + fixture.split(".", maxsplit=1)[0].replace("-", "_"))
    )
    assert _normalised(back["spec"]["versions"]) == _normalised(crd["spec"]["versions"])
    for key in ("group", "names", "scope"):
        assert back["spec"][key] == crd["spec"][key]


@pytest.mark.parametrize("kind", ["MySrv", "ClusterPool"])
def test_models_of_pyctrl_crds_keep_rules_list_maps_defaults_and_versions(kind: str) -> None:
    """CEL rules, list-map keys, int-or-string, defaults and two served versions survive."""
    (crd,) = [
        c for c in crds_for(MySrv, MySrvV1alpha1, ClusterPool) if c["spec"]["names"]["kind"] == kind
    ]
    source = models_for(crd)
    back = crd_for(*_classes(source, f"gen_{kind.lower()}"))
    assert back["spec"]["versions"] == crd["spec"]["versions"]
    if kind == "MySrv":
        assert "class MySrvV1(CustomResource" in source
        assert "class MySrvV1alpha1(CustomResource" in source
        assert "XValidation('self.minReplicas <= self.maxReplicas'" in source


@pytest.mark.parametrize(("module", "samples", "kind"), [t[1:] for t in THIRD_PARTY])
def test_published_samples_decode_and_encode_unchanged(
    module: types.ModuleType, samples: str, kind: str
) -> None:
    """The projects' published samples read into the models and write back equal."""
    docs = list(yaml.safe_load_all((FIXTURES / samples).read_text()))
    assert docs
    for sample in docs:
        obj = getattr(module, kind).from_dict(sample)
        assert obj.to_dict() == sample


def test_decoded_samples_are_typed() -> None:
    """Decoded samples hold the generated classes, with wire names mapped to attributes."""
    samples = list(yaml.safe_load_all((FIXTURES / "cert-manager-samples.yaml").read_text()))
    spec = generated.Certificate.from_dict(samples[0]).spec
    assert spec is not None
    assert spec.issuer_ref.kind == "Issuer"
    assert spec.is_ca is False
    assert spec.private_key is not None
    assert spec.private_key.algorithm == "RSA"


@pytest.mark.parametrize(("fixture", "module"), [t[:2] for t in THIRD_PARTY])
def test_generated_module_is_current_and_generation_is_idempotent(
    fixture: str, module: types.ModuleType
) -> None:
    """The committed module is what the generator writes today, and twice gives the same."""
    crd = _load(fixture)
    source = f"tests/crd/fixtures/{fixture}"
    text = models_for(crd, source=source)
    assert text == models_for(crd, source=source)
    assert text == Path(str(module.__file__)).read_text()


def test_generated_models_use_python_types_and_wire_aliases() -> None:
    """Optional fields are Omittable, enums Literal, timestamps Time, odd names aliased."""
    text = Path(generated.__file__).read_text()
    assert "is_ca: Omittable[bool] = Field(default=None, alias='isCA')" in text
    assert "algorithm: Omittable[Literal['RSA', 'ECDSA', 'Ed25519']] = None" in text
    assert "not_after: Omittable[Time] = None" in text
    assert "ListType('map', keys=('type',))" in text
    assert "renew_before_percentage: Omittable[Int32] = None" in text
    assert '"""\n    A Certificate resource should be created' in text
    monitors_text = Path(str(monitors.__file__)).read_text()
    assert "target_port: Omittable[IntOrString] = None" in monitors_text
    assert "native_histogram_min_bucket_factor: Omittable[Quantity] = None" in monitors_text
    assert "MapType('atomic')" in monitors_text
    assert "ListType('set')" in monitors_text


def test_a_value_the_schema_refuses_is_refused_in_python() -> None:
    """An enum value outside the CRD's enum fails validation, naming the wire path."""
    with pytest.raises(ValueError, match=r"spec\.privateKey\.algorithm"):
        generated.Certificate.from_dict(
            {"spec": {"secretName": "s", "issuerRef": {"name": "i"},
             "privateKey": {"algorithm": "DSA"}}}
        )  # fmt: skip


def test_models_for_refuses_what_is_not_a_v1_crd() -> None:
    """A v1beta1 CRD (or any other object) is refused with what it is."""
    with pytest.raises(
        SchemaError, match=r"apiextensions\.k8s\.io/v1beta1, Kind=CustomResourceDefinition"
    ):
        models_for(
            {"apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "CustomResourceDefinition"}
        )
