"""``pyctrl create api`` and ``pyctrl create webhook``: grow a project, as kubebuilder's do.

Run in a project made by ``pyctrl init`` (its ``PROJECT`` file says the package, the
domain and what exists). ``create api`` adds a typed resource and/or a controller for a
group/version/kind; a new version of an existing kind becomes a spoke of the kind's hub
(the first version), with ``to_hub``/``from_hub`` and the ``/convert`` webhook wired.
``create webhook`` adds a kind's defaulting and validating webhooks (and conversion, if
not served yet). Each adds a sample and tests, wires itself into ``<package>/__main__.py``
at its ``# +pyctrl:scaffold:`` markers, updates ``PROJECT`` and regenerates ``config/``, so
the project keeps passing its tests and ``mypy --strict``.

Everything is checked before anything is written: asking for a part that exists (the
same API twice, a second controller for a kind) fails with one line and changes nothing.
"""

from __future__ import annotations

import keyword
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from pyctrl.cli import _project
from pyctrl.cli._common import CliError, reports_errors
from pyctrl.cli._init import DNS_LABEL, KIND, RESERVED_KINDS, VERSION
from pyctrl.cli._scaffold import Changes, regenerate_manifests, render

if TYPE_CHECKING:
    from pyctrl.cli._project import Project, Resource

# Names the scaffolded modules define or import besides those `init` reserves.
_RESERVED = RESERVED_KINDS | {
    "Any",
    "Self",
    "Warnings",
    "FieldError",
    "InvalidObjectError",
    "InvalidError",
    "KubeModel",
    "TYPES",
    "SPOKES",
}


def _ask(value: bool | None, question: str, default: bool) -> bool:
    """A flag's value; when it was not given, ask on a terminal (else the default)."""
    if value is not None:
        return value
    if sys.stdin is not None and sys.stdin.isatty():
        return click.confirm(question, default=default)
    return default


@dataclass(frozen=True)
class _Names:
    """Where the parts of one group/version/kind live in the project."""

    package: str
    group: str
    version: str
    kind: str

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def types_module(self) -> str:
        return f"{self.package}.apis.{self.version}.{self.singular}"

    @property
    def controller_module(self) -> str:
        return f"{self.package}.controllers.{self.singular}"

    @property
    def webhook_module(self) -> str:
        return f"{self.package}.webhooks.{self.singular}"

    @property
    def conversion_module(self) -> str:
        return f"{self.package}.webhooks.{self.singular}_conversion"

    @property
    def main(self) -> str:
        return f"{self.package}/__main__.py"


def _path(module: str) -> str:
    return module.replace(".", "/") + ".py"


def _values(project: Project, resource: Resource, **extra: str) -> dict[str, str]:
    """The template values of ``resource``."""
    api = resource.api
    namespaced = api.namespaced if api is not None else True
    return {
        "name": project.project_name,
        "package": project.package,
        "kind": resource.kind,
        "singular": resource.kind.lower(),
        "plural": resource.plural,
        "group": resource.group,
        "api_group": resource.api_group,
        "version": resource.version,
        "class_name": api.class_name if api is not None else resource.kind,
        "api_module": api.module if api is not None else "",
        "scope_keyword": "" if namespaced else '\n    scope="Cluster",',
        "namespace_keyword": ', namespace="default"' if namespaced else "",
        "namespace_argument": ', "default"' if namespaced else "",
        "namespace_value": '"default"' if namespaced else "None",
        **extra,
    }


def _package_inits(changes: Changes, package: str, module: str, what: str) -> None:
    """``__init__.py`` for every package between ``package`` and ``module``."""
    parts = module.split(".")[:-1]
    for depth in range(2, len(parts) + 1):
        directory = "/".join(parts[:depth])
        changes.ensure(f"{directory}/__init__.py", f'"""{what} of the {package} operator."""\n')


def _check_names(project: Project, group: str, version: str, kind: str) -> None:
    if not DNS_LABEL.match(group):
        raise CliError(f"--group {group!r} must be a DNS label, e.g. webapp")
    if not VERSION.match(version):
        raise CliError(f"--version {version!r} must look like v1, v1alpha1 or v2beta3")
    if not KIND.match(kind):
        raise CliError(f"--kind {kind!r} must be CamelCase letters and digits, e.g. Guestbook")
    if kind in _RESERVED or keyword.iskeyword(kind.lower()):
        raise CliError(f"--kind {kind!r} would shadow a name the generated code uses")
    for resource in project.resources:
        if resource.kind.lower() == kind.lower() and (resource.group, resource.kind) != (
            group,
            kind,
        ):
            raise CliError(
                f"the project has the kind {resource.kind} in group {resource.api_group}: "
                f"{kind} of {group}.{project.domain} would share its modules; choose another kind"
            )


def _resource_parts(
    changes: Changes, project: Project, resource: Resource, hub: Resource | None
) -> None:
    """The types module (a spoke of ``hub`` if given), its sample, and its wiring."""
    assert resource.api is not None
    names = _Names(project.package, resource.group, resource.version, resource.kind)
    _package_inits(changes, project.package, resource.api.module, "API types")
    main = names.main
    if hub is None:
        changes.add(
            _path(resource.api.module), render("create/types.py.tmpl", _values(project, resource))
        )
    else:
        assert hub.api is not None
        webhooks = hub.webhooks or _project.Webhooks()
        conversion = webhooks.conversion_module or names.conversion_module
        values = _values(
            project,
            resource,
            hub_module=hub.api.module,
            hub_class=hub.api.class_name,
            hub_version=hub.version,
            conversion_module=conversion,
        )
        changes.add(_path(resource.api.module), render("create/spoke.py.tmpl", values))
        _conversion_parts(changes, project, hub, [resource])
    changes.edit(main, "imports", f"from {resource.api.module} import {resource.api.class_name}")
    changes.edit(main, "types", f"{resource.api.class_name},")
    sample = f"config/samples/{resource.group}_{resource.version}_{resource.kind.lower()}.yaml"
    changes.add(sample, render("sample.yaml.tmpl", _values(project, resource)))


def _conversion_parts(
    changes: Changes, project: Project, hub: Resource, spokes: list[Resource]
) -> None:
    """Serve conversion between ``hub`` and ``spokes``; record it on the hub."""
    assert hub.api is not None
    names = _Names(project.package, hub.group, hub.version, hub.kind)
    webhooks = hub.webhooks or _project.Webhooks()
    module = webhooks.conversion_module or names.conversion_module
    if not webhooks.conversion:
        _package_inits(changes, project.package, module, "Webhooks")
        values = _values(
            project,
            hub,
            hub_module=hub.api.module,
            hub_class=hub.api.class_name,
            hub_version=hub.version,
        )
        changes.add(_path(module), render("create/conversion.py.tmpl", values))
        changes.edit(
            names.main,
            "imports",
            f"from {module} import setup as setup_{names.singular}_conversion",
        )
        changes.edit(names.main, "setup", f"setup_{names.singular}_conversion(manager)")
    for spoke in spokes:
        assert spoke.api is not None
        changes.edit(
            _path(module), "spoke-imports", f"from {spoke.api.module} import {spoke.api.class_name}"
        )
        changes.edit(_path(module), "spokes", f"{spoke.api.class_name},")
        values = _values(
            project,
            spoke,
            hub_class=hub.api.class_name,
            hub_version=hub.version,
            title=f"Conversion of {spoke.kind} {spoke.version} through the hub, {hub.version}",
            test_imports="",
            class_imports=(
                f"from {hub.api.module} import {hub.api.class_name}\n"
                f"from {spoke.api.module} import {spoke.api.class_name}, "
                f"{spoke.api.class_name}Spec"
            ),
        )
        test = render("create/test_webhooks_head.py.tmpl", values) + render(
            "create/test_conversion.py.part", values
        )
        changes.add(f"tests/test_{names.singular}_{spoke.version}_conversion.py", test)
        if spoke.version not in webhooks.spokes:
            webhooks.spokes.append(spoke.version)
    webhooks.conversion = True
    webhooks.conversion_module = module
    hub.webhooks = webhooks
    hub.hub = True


def _controller_parts(changes: Changes, project: Project, resource: Resource) -> None:
    names = _Names(project.package, resource.group, resource.version, resource.kind)
    module = names.controller_module
    values = _values(project, resource)
    _package_inits(changes, project.package, module, "Controllers")
    changes.add(_path(module), render("create/controller.py.tmpl", values))
    changes.add(
        f"tests/test_{names.singular}_controller.py",
        render("create/test_controller.py.tmpl", values),
    )
    changes.edit(names.main, "imports", f"from {module} import setup as setup_{names.singular}")
    changes.edit(names.main, "setup", f"setup_{names.singular}(manager)")
    resource.controller = True
    resource.controller_module = module


def _finish(root: Path, project: Project, changes: Changes) -> None:
    written = changes.write()
    _project.save(root, project)
    for relative in written:
        click.echo(f"{'created' if relative in changes.new else 'updated'} {relative}")
    click.echo(f"updated {_project.FILE}")
    regenerate_manifests(root, project.package)
    click.echo(f"regenerated config/ (pyctrl generate {project.package}.__main__:operator)")


@click.group("create", help="Add an API (types and controller) or webhooks to the project.")
def create() -> None:
    """The ``pyctrl create`` group (``kubebuilder create``)."""


def _refuse_conflicts(
    api: str,
    kind: str,
    existing: _project.Resource | None,
    has_controller: list[_project.Resource],
    *,
    want_resource: bool,
    want_controller: bool,
) -> None:
    """Refuse a create api that would create nothing, or what already exists."""
    if not want_resource and not want_controller:
        if existing is not None and existing.api is not None and has_controller:
            raise CliError(
                f"the API {api} and its controller already exist "
                f"(recorded in {_project.FILE}): nothing was changed"
            )
        raise CliError("nothing to create: pass --resource and/or --controller")
    if want_resource and existing is not None and existing.api is not None:
        raise CliError(
            f"the API {api} already exists ({existing.api.module}, "
            f"recorded in {_project.FILE}): nothing was changed"
        )
    if want_controller and has_controller:
        first = has_controller[0]
        raise CliError(
            f"{kind} already has a controller ({first.controller_module}, for "
            f"{first.version}): a kind has one controller; nothing was changed"
        )
    if want_controller and not want_resource and (existing is None or existing.api is None):
        raise CliError(
            f"there is no {api} type for a controller to reconcile: "
            "pass --resource to create it too"
        )


def _hub_scope(
    hub: _project.Resource, hub_api: _project.API, kind: str, namespaced: bool | None
) -> bool:
    """A new version's scope: the hub's; asking for another one is an error."""
    if namespaced is not None and namespaced != hub_api.namespaced:
        scope = "namespaced" if hub_api.namespaced else "cluster-scoped"
        raise CliError(
            f"{kind} is {scope} ({hub.version}): every version of a kind has the same scope"
        )
    return hub_api.namespaced


@create.command("api")
@click.option("--group", required=True, help="First label of the API group: <group>.<domain>.")
@click.option("--version", required=True, help="API version, e.g. v1 or v1alpha1.")
@click.option("--kind", required=True, help="Kind, CamelCase, e.g. Memcached.")
@click.option(
    "--namespaced/--cluster",
    default=None,
    help="Scope of the resource [default: namespaced; a new version keeps its kind's].",
)
@click.option(
    "--resource/--no-resource",
    default=None,
    help="Scaffold the typed resource [asked on a terminal; default: yes].",
)
@click.option(
    "--controller/--no-controller",
    default=None,
    help="Scaffold a controller [asked on a terminal; default: yes, unless the kind has one].",
)
@reports_errors
def create_api(
    *,
    group: str,
    version: str,
    kind: str,
    namespaced: bool | None,
    resource: bool | None,
    controller: bool | None,
) -> None:
    """Add a group/version/kind: its typed resource and/or its controller.

    Writes the types under <package>/apis/<version>/, the controller under
    <package>/controllers/, a sample under config/samples/ and tests; wires them into
    <package>/__main__.py, records them in PROJECT and regenerates config/. A new version
    of an existing kind is a spoke of the kind's hub (its first version), converted by
    the operator's /convert webhook. Omitted --resource/--controller are asked on a
    terminal, as kubebuilder does, and default otherwise.
    """
    from pyctrl.resource import pluralize

    root = Path.cwd()
    project = _project.load(root)
    _check_names(project, group, version, kind)
    domain = project.domain
    hub = project.hub_of(group, domain, kind)
    has_controller = [
        r
        for r in project.resources
        if (r.group, r.domain, r.kind) == (group, domain, kind) and r.controller
    ]
    existing = project.find(group, domain, version, kind)
    want_resource = _ask(resource, "Create Resource", default=True)
    want_controller = _ask(controller, "Create Controller", default=not has_controller)
    _refuse_conflicts(
        f"{group}.{domain}/{version} {kind}",
        kind,
        existing,
        has_controller,
        want_resource=want_resource,
        want_controller=want_controller,
    )
    if hub is not None and hub.api is not None and want_resource:
        namespaced = _hub_scope(hub, hub.api, kind, namespaced)
    names = _Names(project.package, group, version, kind)
    target = existing or _project.Resource(
        group=group, domain=domain, version=version, kind=kind, plural=pluralize(kind)
    )
    changes = Changes(root)
    if want_resource:
        spoke = hub is not None and hub.api is not None
        target.api = _project.API(
            namespaced=True if namespaced is None else namespaced,
            module=names.types_module,
            class_name=f"{kind}{version.capitalize()}" if spoke else kind,
        )
        if existing is None:
            project.resources.append(target)
        _resource_parts(changes, project, target, hub if spoke else None)
    if want_controller:
        _controller_parts(changes, project, target)
    _finish(root, project, changes)


def _webhook_target(
    project: Project, kind: str, group: str | None, version: str | None
) -> Resource:
    candidates = [r for r in project.resources if r.kind == kind and r.api is not None]
    if group is not None:
        candidates = [r for r in candidates if r.group == group]
    if not candidates:
        raise CliError(
            f"the project has no {kind} API{f' in group {group}' if group else ''}: "
            f"create it first with `pyctrl create api --kind {kind} ...`"
        )
    groups = sorted({r.group for r in candidates})
    if len(groups) > 1:
        raise CliError(f"{kind} exists in groups {', '.join(groups)}: pass --group")
    first = candidates[0]
    if version is None:
        hub = project.hub_of(first.group, first.domain, kind)
        assert hub is not None
        return hub
    for resource in candidates:
        if resource.version == version:
            return resource
    versions = ", ".join(r.version for r in candidates)
    raise CliError(f"{kind} has no version {version} (it has {versions})")


@create.command("webhook")
@click.option("--kind", required=True, help="The kind whose webhooks to scaffold.")
@click.option("--group", help="Its group, when the kind name is not enough.")
@click.option("--version", help="The version the webhooks take [default: the kind's hub].")
@click.option("--defaulting", is_flag=True, help="A defaulting (mutating) webhook.")
@click.option("--programmatic-validation", "validation", is_flag=True, help="A validating webhook.")
@click.option(
    "--conversion",
    is_flag=True,
    help="Serve conversion between the kind's versions (done by `create api` for a new version).",
)
@reports_errors
def create_webhook(
    *,
    kind: str,
    group: str | None,
    version: str | None,
    defaulting: bool,
    validation: bool,
    conversion: bool,
) -> None:
    """Add a kind's defaulting and/or validating webhooks, or its conversion webhook.

    Writes <package>/webhooks/<kind>.py with a Defaulter and a Validator to fill in,
    registered with webhook_managed_by in its setup, and tests that run them through the
    embedded API server; wires the setup into <package>/__main__.py, records it in PROJECT
    and regenerates config/ (webhook configurations, Service, cert-manager Certificate).
    """
    if not (defaulting or validation or conversion):
        raise CliError(
            "nothing to create: pass --defaulting, --programmatic-validation and/or --conversion"
        )
    root = Path.cwd()
    project = _project.load(root)
    target = _webhook_target(project, kind, group, version)
    assert target.api is not None
    changes = Changes(root)
    webhooks = target.webhooks or _project.Webhooks()
    if (defaulting or validation) and webhooks.module is not None:
        made = [
            w
            for w, on in (("defaulting", webhooks.defaulting), ("validating", webhooks.validation))
            if on
        ]
        raise CliError(
            f"{kind} {target.version} already has {' and '.join(made)} webhooks in "
            f"{webhooks.module}: extend that module by hand; nothing was changed"
        )
    if conversion:
        hub = project.hub_of(target.group, target.domain, kind)
        assert hub is not None
        spokes = [r for r in project.versions_of(target.group, target.domain, kind) if r is not hub]
        if not spokes:
            raise CliError(
                f"{kind} has one version ({hub.version}): add another with `pyctrl create api "
                f"--group {hub.group} --version ... --kind {kind}` (which sets up conversion)"
            )
        if hub.webhooks is not None and hub.webhooks.conversion:
            raise CliError(
                f"{kind} conversion is already served ({hub.webhooks.conversion_module}); "
                "nothing was changed"
            )
        _conversion_parts(changes, project, hub, spokes)
    if defaulting or validation:
        _admission_parts(changes, project, target, defaulting, validation)
    _finish(root, project, changes)


def _admission_parts(
    changes: Changes, project: Project, target: Resource, defaulting: bool, validation: bool
) -> None:
    assert target.api is not None
    names = _Names(project.package, target.group, target.version, target.kind)
    module = names.webhook_module
    base = _values(project, target)
    classes, chain, what = "", "", []
    if defaulting:
        classes += render("create/defaulter.py.part", base)
        chain += f"        .with_defaulter({target.kind}Defaulter())\n"
        what.append("defaulting")
    if validation:
        classes += render("create/validator.py.part", base)
        chain += f"        .with_validator({target.kind}Validator())\n"
        what.append("validation")
    values = _values(
        project,
        target,
        what=" and ".join(what),
        webhook_imports=(
            "from pyctrl.webhook import FieldError, InvalidObjectError\n" if validation else ""
        ),
        type_imports="    from pyctrl.webhook import Warnings\n" if validation else "",
        classes=classes,
        chain=chain,
    )
    _package_inits(changes, project.package, module, "Webhooks")
    changes.add(_path(module), render("create/webhook.py.tmpl", values))
    tests = _values(
        project,
        target,
        title=f"The {target.kind} {' and '.join(what)} webhooks",
        test_imports="\nfrom pyctrl.errors import InvalidError" if validation else "",
        class_imports=f"from {target.api.module} import {target.api.class_name}, "
        f"{target.api.class_name}Spec",
    )
    text = render("create/test_webhooks_head.py.tmpl", tests)
    if defaulting:
        text += render("create/test_defaulting.py.part", tests)
    if validation:
        text += render("create/test_validation.py.part", tests)
    changes.add(f"tests/test_{names.singular}_webhooks.py", text)
    changes.edit(
        names.main, "imports", f"from {module} import setup as setup_{names.singular}_webhooks"
    )
    changes.edit(names.main, "setup", f"setup_{names.singular}_webhooks(manager)")
    webhooks = target.webhooks or _project.Webhooks()
    webhooks.defaulting = webhooks.defaulting or defaulting
    webhooks.validation = webhooks.validation or validation
    webhooks.module = module
    target.webhooks = webhooks
