"""``python -m examples.demo [--check] [--interactive] [--timeout S] [--rollout-delay S]``."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from pyctrl.log import configure

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["main", "parser"]

_TRUE = ("1", "true", "yes", "on")


def parser() -> argparse.ArgumentParser:
    """The command-line flags of the demo."""
    result = argparse.ArgumentParser(
        prog="python -m examples.demo",
        description=(
            "Run the MySrv operator against pyctrl's embedded API server, apply its samples "
            "and watch what happens; then poke at it with kubectl until Ctrl-C."
        ),
    )
    mode = result.add_mutually_exclusive_group()
    mode.add_argument(
        "--check",
        action="store_true",
        help="no live view: exit 0 once the expected state is reached, 1 if it is not "
        "(the default when stdout is not a terminal or CI is set)",
    )
    mode.add_argument(
        "--interactive", action="store_true", help="the live view, even without a terminal"
    )
    result.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="how long the scenario may take to reach the expected state (default: 60)",
    )
    result.add_argument(
        "--rollout-delay",
        type=float,
        default=1.5,
        metavar="SECONDS",
        help="how long a Deployment takes to become available (default: 1.5)",
    )
    return result


def _non_interactive() -> bool:
    return not sys.stdout.isatty() or os.environ.get("CI", "").strip().lower() in _TRUE


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo; return its exit status."""
    args = parser().parse_args(argv)
    if args.timeout <= 0 or args.rollout_delay < 0:
        parser().error("--timeout must be positive and --rollout-delay not negative")
    check = args.check or (not args.interactive and _non_interactive())
    with tempfile.TemporaryDirectory(prefix="pyctrl-demo-") as tmp:
        workdir = Path(tmp)
        log_file = workdir / "operator.log"
        with log_file.open("w") as log:
            # Before pyctrl's other modules are imported: they create their loggers then.
            configure(development=False, level="INFO", stream=log)
            from examples.demo.scenario import Settings, run

            settings = Settings(
                check=check,
                timeout=args.timeout,
                rollout_delay=args.rollout_delay,
                workdir=workdir,
                log_file=log_file,
            )
            console = Console(width=120) if check else Console()
            return asyncio.run(run(settings, console))


if __name__ == "__main__":
    sys.exit(main())
