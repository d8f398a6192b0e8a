"""``pyctrl generate``: write an operator's manifests, or check that they are current.

This is controller-gen plus the kustomize bases kubebuilder keeps under ``config/``:
the manifests are a function of the Python code (`pyctrl.app.Operator.render_manifests`),
so they are generated, never edited, and CI checks them with ``--check``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import click

from pyctrl.cli._common import CliError, describe, reports_errors
from pyctrl.cli._load import Target, custom_resources, load, operator_hint

if TYPE_CHECKING:
    from types import ModuleType

    from pyctrl.app import Operator

WHAT = ("all", "crd", "rbac", "manager", "webhook", "policy", "installer", "helm")
# The subdirectories `Operator.write_manifests` owns: stale YAML in them is removed.
GENERATED = ("crd", "rbac", "manager", "webhook", "policy", "prometheus", "default")
# Where each kind of output goes without --out.
DEFAULT_OUT = {"installer": Path("dist"), "helm": Path("dist/chart")}


@dataclass
class Plan:
    """How the files on disk differ from the rendered manifests.

    Attributes:
        write: Files to create or overwrite, with why (``missing`` or ``differs``).
        remove: Files no longer generated.
        unchanged: Files already current.
    """

    write: dict[Path, tuple[str, str]] = field(default_factory=dict)
    remove: list[Path] = field(default_factory=list)
    unchanged: list[Path] = field(default_factory=list)

    @property
    def stale(self) -> bool:
        """True if anything would be written or removed."""
        return bool(self.write or self.remove)


def plan(out: Path, rendered: dict[str, str], subdirectories: set[str]) -> Plan:
    """Compare ``rendered`` (text by relative path) with the files under ``out``.

    YAML files in ``subdirectories`` that are not rendered are to be removed, as
    `pyctrl.app.Operator.write_manifests` removes them.
    """
    result = Plan()
    for name, text in sorted(rendered.items()):
        path = out / name
        try:
            current = path.read_text() if path.is_file() else None
        except OSError as exc:
            raise CliError(f"cannot read {path}: {exc.strerror or exc}") from exc
        if current is None:
            result.write[path] = (text, "missing")
        elif current != text:
            result.write[path] = (text, "differs")
        else:
            result.unchanged.append(path)
    for sub in sorted(subdirectories):
        for path in sorted((out / sub).glob("*.yaml")):
            if f"{sub}/{path.name}" not in rendered:
                result.remove.append(path)
    return result


def apply(result: Plan) -> None:
    """Carry out ``result``: write the changed files, remove the stale ones."""
    for path, (text, _why) in result.write.items():
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        except OSError as exc:
            raise CliError(f"cannot write {path}: {exc.strerror or exc}") from exc
    for path in result.remove:
        try:
            path.unlink()
        except OSError as exc:
            raise CliError(f"cannot remove stale {path}: {exc.strerror or exc}") from exc


def render_operator(operator: Operator, target: Target, what: str = "all") -> dict[str, str]:
    """The operator's manifests by relative path; user-code errors become `CliError`.

    ``installer`` renders ``install.yaml``, ``helm`` the chart; anything else ``config/``.
    """
    render = {
        "installer": operator.render_installer,
        "helm": operator.render_chart,
    }.get(what, operator.render_manifests)
    try:
        return asyncio.run(render())
    except Exception as exc:
        raise CliError(f"cannot render the manifests of {target}: {describe(exc)}") from exc


def render_crds(module: ModuleType) -> dict[str, str]:
    """CRDs of the `CustomResource` classes in ``module``, one file per group and kind."""
    from pyctrl.crd import crds_for, to_yaml

    types = custom_resources(module)
    if not types:
        raise CliError(
            f"module {module.__name__!r} defines no Operator and no CustomResource classes"
        )
    try:
        crds = crds_for(*types)
    except Exception as exc:
        raise CliError(
            f"cannot generate the CRDs of module {module.__name__!r}: {describe(exc)}"
        ) from exc
    from pyctrl.app import kustomizations

    files = {f"crd/{crd['metadata']['name']}.yaml": [crd] for crd in crds}
    rendered = {name: to_yaml(objects) for name, objects in files.items()}
    rendered["crd/kustomization.yaml"] = kustomizations(files)["crd/kustomization.yaml"]
    return rendered


def _parse(args: list[str]) -> tuple[str, Target]:
    if len(args) == 1 and args[0] not in WHAT:
        return "all", Target.parse(args[0])
    if len(args) == 2 and args[0] in WHAT:
        return args[0], Target.parse(args[1])
    if len(args) == 2:
        raise click.BadParameter(
            f"{args[0]!r} is not one of {', '.join(WHAT)}", param_hint="'[WHAT]'"
        )
    if len(args) == 1:
        raise click.BadParameter(
            f"missing MODULE[:ATTRIBUTE] after {args[0]!r}", param_hint="'TARGET'"
        )
    raise click.BadParameter(
        f"expected [WHAT] MODULE[:ATTRIBUTE], got {len(args)} arguments", param_hint="'TARGET'"
    )


def render_files(what: str, target: Target) -> dict[str, str]:
    from pyctrl.app import Operator

    found = load(target)
    if isinstance(found, Operator):
        return render_operator(found, target, what)
    if what == "crd":
        return render_crds(found)
    raise CliError(
        f"module {target.module!r} defines no Operator: {operator_hint(found)} "
        f"(`pyctrl generate crd {target.module}` writes the CRDs of its "
        "CustomResource classes without one)"
    )


def _select(what: str, rendered: dict[str, str]) -> tuple[dict[str, str], set[str]]:
    """The files to generate and the subdirectories whose other YAML files are stale."""
    if what == "all":
        return rendered, {name.split("/", 1)[0] for name in rendered} | set(GENERATED)
    if what == "installer":
        return rendered, set()
    if what == "helm":
        return rendered, {"templates"}
    selected = {name: text for name, text in rendered.items() if name.startswith(f"{what}/")}
    return selected, {what}


def _report(result: Plan, out: Path, command: str) -> None:
    for path, (_text, why) in result.write.items():
        click.echo(f"stale: {path} ({why})")
    for path in result.remove:
        click.echo(f"stale: {path} (no longer generated)")
    count = len(result.write) + len(result.remove)
    raise CliError(
        f"{_files(count)} under {out} {'is' if count == 1 else 'are'} stale; "
        f"regenerate with: {command}"
    )


def _report_breaking(result: Plan) -> None:
    """Print the breaking changes of each stale CRD against its committed version."""
    import yaml

    from pyctrl.cli._compat import incompatibilities

    for path, (text, why) in result.write.items():
        if why != "differs" or path.parent.name != "crd":
            continue
        old = {d["metadata"]["name"]: d for d in yaml.safe_load_all(path.read_text()) if d}
        new = {d["metadata"]["name"]: d for d in yaml.safe_load_all(text) if d}
        for change in incompatibilities(old, new, ()):
            click.echo(
                f"breaking: {change} (pyctrl crd check --allow {change.rule}@{change.field})"
            )


def _files(count: int) -> str:
    return f"{count} manifest file{'' if count == 1 else 's'}"


@click.command("generate")
@click.argument("args", nargs=-1, required=True, metavar="[WHAT] MODULE[:ATTRIBUTE]")
@click.option(
    "--out",
    "-o",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Directory of the manifests [default: config; installer: dist; helm: dist/chart].",
)
@click.option(
    "--check",
    is_flag=True,
    help="Write nothing; exit 1 listing the files that are missing, differ or are "
    "no longer generated (for CI).",
)
@click.option(
    "--crd",
    "crd_files",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="models: a CRD file (YAML or JSON) to write typed models for; repeatable.",
)
@click.option(
    "--crd-name",
    "crd_names",
    multiple=True,
    help="models: the name of a CRD in the cluster of the kubeconfig; repeatable.",
)
@click.option("--kubeconfig", type=click.Path(dir_okay=False), help="models: kubeconfig file.")
@click.option("--context", help="models: kubeconfig context.")
@click.pass_context
@reports_errors
def generate(
    ctx: click.Context,
    *,
    args: tuple[str, ...],
    out: Path | None,
    check: bool,
    crd_files: tuple[Path, ...],
    crd_names: tuple[str, ...],
    kubeconfig: str | None,
    context: str | None,
) -> None:
    """Write an Operator's manifests, or check that they are current.

    WHAT is all (default), crd, rbac, manager, webhook, policy, installer or helm;
    MODULE[:ATTRIBUTE] is where the Operator is, e.g. mysrv.__main__:operator. Without
    :ATTRIBUTE the module's one Operator is used; `crd` also works on a module that has
    CustomResource classes but no Operator yet.

    CRDs, RBAC, the manager's Deployment, webhook configurations and admission policies,
    generated from the Python code into crd/, rbac/, manager/, webhook/ and policy/
    under --out, each with a
    kustomization.yaml, and default/kustomization.yaml (`kubectl kustomize
    config/default`). Stale YAML files in those subdirectories are removed. `installer`
    writes the same objects as one install.yaml; `helm` writes a Helm chart of them.

    `pyctrl generate models --crd FILE [--crd-name NAME] [--out DIR]` writes typed
    CustomResource models of CRDs you did not write, one module per CRD (to standard
    output without --out).
    """
    if args == ("models",):
        from pyctrl.cli import _models

        found = _models.crds_from_files(crd_files)
        if crd_names:
            found += _models.crds_from_cluster(crd_names, kubeconfig, context)
        if not found:
            raise CliError("generate models needs --crd FILE or --crd-name NAME")
        explicit = ctx.get_parameter_source("out") is not click.core.ParameterSource.DEFAULT
        _models.generate_models(found, out if explicit else None, check)
        return
    what, target = _parse(list(args))
    default_out = DEFAULT_OUT.get(what, Path("config"))
    out = out or default_out
    rendered, subdirectories = _select(what, render_files(what, target))
    result = plan(out, rendered, subdirectories)
    if check:
        _report_breaking(result)
        if result.stale:
            command = f"pyctrl generate {'' if what == 'all' else what + ' '}{target}"
            if out != default_out:
                command += f" --out {out}"
            _report(result, out, command)
        click.echo(f"{out}: {_files(len(result.unchanged))} up to date")
        return
    apply(result)
    for path, (_text, why) in result.write.items():
        click.echo(f"{'created' if why == 'missing' else 'updated'} {path}")
    for path in result.remove:
        click.echo(f"removed {path}")
    if not rendered:
        click.echo(f"{target} has no {what} manifests")
    elif not result.stale:
        click.echo(f"{out}: {_files(len(result.unchanged))} up to date")
