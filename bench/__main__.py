"""Run the benchmarks: ``python -m bench [name ...]`` (all by default).

Each benchmark prints its own table and returns its figures; they are written together
to ``bench-results/latest.json`` so runs can be compared.
"""

from __future__ import annotations

import importlib
import json
import pathlib
import sys
import time

BENCHMARKS = [
    "workqueue",
    "fairness",
    "apiserver",
    "apiserver_against",
    "cache",
    "controllers",
    "provenance",
    "sharding",
    "dependents",
    "startup",
    "listmemory",
    "eventpath",
]


def main(argv: list[str]) -> int:
    """Run the named benchmarks (all when none is named)."""
    names = argv or BENCHMARKS
    results: dict[str, object] = {}
    for name in names:
        try:
            module = importlib.import_module(f"bench.bench_{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"bench.bench_{name}":
                print(f"no benchmark named {name!r}", file=sys.stderr)
                return 2
            raise
        print(f"\n=== {name} ===", flush=True)
        started = time.perf_counter()
        results[name] = module.main()
        print(f"({name}: {time.perf_counter() - started:.1f} s)", flush=True)
    out = pathlib.Path("bench-results")
    out.mkdir(exist_ok=True)
    (out / "latest.json").write_text(json.dumps(results, indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
