"""Package crd generates CustomResourceDefinitions from typed custom resources.

It is pyctrl's controller-gen. A `pyctrl.resource.CustomResource` class already says
everything a CRD needs: its identity and options in its class keywords, its schema in
its pydantic fields. `crd_for` turns the classes that are the versions of one kind into
an ``apiextensions.k8s.io/v1`` CustomResourceDefinition; `crds_for` does it for many
kinds at once; `to_yaml` writes the result as YAML that ``kubectl apply -f`` accepts::

    print(to_yaml(crd_for(MySrvV1alpha1, MySrv)))

The ``openAPIV3Schema`` of each version (`schema_for`) is structural, as the API server
requires: field types map to OpenAPI types (``int`` -> integer, ``datetime`` ->
``date-time`` string, ``Optional[X]`` -> ``X`` with ``nullable: true``, ``dict[str, X]``
-> ``additionalProperties``, ``Literal`` and ``Enum`` -> ``enum``, ``Any`` -> unknown
fields preserved), pydantic constraints (``Field(ge=1, max_length=63, pattern=...)``)
become validations, defaults are written in wire form, property names are the camelCase
wire names, and descriptions come from ``Field(description=...)`` and docstrings (a
class's ``Attributes:`` section describes its fields) the way controller-gen reads Go
comments. Types with no structural form (recursive models, unions other than
``Optional`` and `IntOrString`) raise `pyctrl.errors.SchemaError` naming the class and
field. `structural_errors` checks a schema, generated or hand-written, the way the API
server checks it on CRD create.

What controller-gen's ``+kubebuilder`` comment markers do, markers do here, as
``typing.Annotated`` metadata: `ListType`, `MapType`, `PreserveUnknownFields`,
`EmbeddedResource`, `XValidation` (CEL rules; also a class decorator for rules that
relate fields), `Format`, `Description`, `Schemaless`; and the types `IntOrString`,
`Quantity`, `Int32` and `Int64`. `Marker` is the base class for writing your own.

Fields may also be kubernetes-asyncio models (``V1PodTemplateSpec``...): their schema is
the one the API server publishes for the built-in type. `models_for` goes the other way,
writing typed models for CRDs of other projects (``pyctrl generate models``).

Upgrades: `breaking_changes` names what a new CRD would break for stored objects
(``pyctrl crd check``); `migrate_storage_version` and the leader-only
`StorageVersionMigrator` rewrite every object at the storage version and prune
``status.storedVersions``, so an old version can be dropped (``pyctrl crd migrate``).
"""

from __future__ import annotations

from pyctrl.crd._check import structural_errors
from pyctrl.crd._compat import Change, breaking_changes
from pyctrl.crd._crd import crd_for, crds_for, version_priority_key
from pyctrl.crd._generate import schema_for
from pyctrl.crd._markers import (
    ClassMarker,
    Default,
    Description,
    EmbeddedResource,
    Format,
    Int32,
    Int64,
    IntOrString,
    ListType,
    MapType,
    Marker,
    NotNullable,
    Omittable,
    PreserveUnknownFields,
    Quantity,
    SchemaExtra,
    Schemaless,
    XValidation,
)
from pyctrl.crd._migrate import MigrationResult, StorageVersionMigrator, migrate_storage_version
from pyctrl.crd._models import models_for
from pyctrl.crd._yaml import to_yaml

__all__ = [
    "Change",
    "ClassMarker",
    "Default",
    "Description",
    "EmbeddedResource",
    "Format",
    "Int32",
    "Int64",
    "IntOrString",
    "ListType",
    "MapType",
    "Marker",
    "MigrationResult",
    "NotNullable",
    "Omittable",
    "PreserveUnknownFields",
    "Quantity",
    "SchemaExtra",
    "Schemaless",
    "StorageVersionMigrator",
    "XValidation",
    "breaking_changes",
    "crd_for",
    "crds_for",
    "migrate_storage_version",
    "models_for",
    "schema_for",
    "structural_errors",
    "to_yaml",
    "version_priority_key",
]
