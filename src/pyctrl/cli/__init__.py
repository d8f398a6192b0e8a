"""The ``pyctrl`` command: what kubebuilder and operator-sdk do, for pyctrl operators.

::

    pyctrl init DIRECTORY [--name --domain --group --version --kind]   # new project
    pyctrl create api --group G --version V --kind K [--namespaced/--cluster]
    pyctrl create webhook --kind K [--defaulting] [--programmatic-validation] [--conversion]
    pyctrl generate [all|crd|rbac|manager|webhook] MODULE[:ATTR] [--out config] [--check]
    pyctrl generate models --crd FILE | --crd-name NAME [--out DIR] [--check]
    pyctrl crd check MODULE[:ATTR]|PATH --against DIR|cluster [--allow RULE[@FIELD]]
    pyctrl crd migrate CRD_NAME...                                   # storage versions
    pyctrl install / uninstall                                       # CRDs, like `make install`
    pyctrl run MODULE[:ATTR] [operator flags...]                      # like `make run`
    pyctrl docker-build [--image IMG] [--dry-run]                    # like `make docker-build`
    pyctrl deploy [--image IMG] / undeploy                           # like `make deploy`
    pyctrl envtest [--crds PATH...]                                  # an API server
    pyctrl version

``init`` scaffolds a project that passes its own tests and ``mypy --strict``;
``generate`` writes an `pyctrl.app.Operator`'s manifests under ``config/`` (or, with
``--check``, fails listing the stale ones, for CI); ``run`` runs the Operator's
``main`` with the remaining arguments; ``envtest`` serves the embedded API server (the
command line of ``python -m pyctrl.envtest``).

Problems the user can fix (a module that does not import, an attribute that is not an
Operator, a directory that cannot be written) end the command with one ``error: ...``
line on stderr and exit status 1; ``pyctrl --traceback ...`` shows the underlying
traceback. Usage errors exit with status 2.
"""

from __future__ import annotations

import click

from pyctrl.cli import _crd, _create, _deploy, _envtest, _generate, _init, _run, _version
from pyctrl.cli._common import set_traceback

__all__ = ["app", "main"]


class _Group(click.Group):
    """Lists the commands in the order they were added (the workflow's), not sorted."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)


@click.group(
    name="pyctrl",
    cls=_Group,
    help="Scaffold, generate manifests for, and run pyctrl operators.",
    no_args_is_help=True,
)
@click.option("--traceback", is_flag=True, help="Print the full traceback behind an error.")
def app(traceback: bool) -> None:
    """The ``pyctrl`` click group (for embedding, and for ``click.testing.CliRunner``)."""
    set_traceback(traceback)


app.add_command(_init.init)
app.add_command(_create.create)
app.add_command(_generate.generate)
app.add_command(_crd.crd)
app.add_command(_deploy.install)
app.add_command(_deploy.uninstall)
app.add_command(_run.run)
app.add_command(_deploy.docker_build)
app.add_command(_deploy.deploy)
app.add_command(_deploy.undeploy)
app.add_command(_envtest.envtest)
app.add_command(_version.version)


def main() -> None:
    """Entry point of the ``pyctrl`` console script."""
    app(prog_name="pyctrl")
