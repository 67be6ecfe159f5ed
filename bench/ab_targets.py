"""Before/after on one machine: `gpuops-bench targets` of two gpuops trees run in alternating rounds, each tree's
runs pooled into one document, and the two documents compared.

    python bench/ab_targets.py BEFORE_TREE AFTER_TREE --out DIR [--rounds K] [--fail-above PCT] -- TARGETS_OPTIONS

Round r runs the trees in the order before, after when r is odd and after, before when it is even, so that a drift
of the machine over the rounds weighs on both alike. Each run is `python -m gpuops.bench targets TARGETS_OPTIONS`
from its tree (the tree first on the import path), writing DIR/before-r.json or DIR/after-r.json (its table in
DIR/before-r.txt). Rounds already in DIR are kept and the new ones numbered after them, so a later call adds
rounds; --rounds 0 only pools and compares. Then every before-*.json is pooled into DIR/before.json and every
after-*.json into DIR/after.json (gpuops.bench.targets.pool), and `gpuops-bench compare DIR/before.json
DIR/after.json` prints the comparison; its exit status is the script's (1: a row slower beyond the noise by more
than --fail-above). Both trees' targets must keep their samples (a gpuops whose targets rows have
`gpu_samples_ns`). The pooling and the comparison run with the gpuops this script imports.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from gpuops.bench import cli, targets

TREES = ("before", "after")


def order(round_number: int) -> tuple[str, str]:
    """The trees in the order round `round_number` (from 1) runs them: ABBA, so a linear drift cancels."""
    return TREES if round_number % 2 else TREES[::-1]


def rounds_in(out: Path) -> int:
    """The highest round number with a run of either tree in `out` (0 when none)."""
    numbers = [int(m.group(1)) for path in out.glob("*-*.json")
               if (m := re.fullmatch(r"(?:before|after)-(\d+)\.json", path.name))]
    return max(numbers, default=0)


def environment(tree: Path) -> dict[str, str]:
    """The environment that makes `python -m gpuops.bench` import gpuops from `tree`."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tree.resolve()), *filter(None, [env.get("PYTHONPATH")])])
    return env


def check_tree(tree: Path) -> None:
    """Refuse a tree whose gpuops is not the one Python imports from it."""
    found = subprocess.run([sys.executable, "-c", "import gpuops; print(gpuops.__file__)"], cwd=tree,
                           env=environment(tree), capture_output=True, text=True)
    if found.returncode != 0 or not Path(found.stdout.strip()).resolve().is_relative_to(tree.resolve()):
        sys.exit(f"ab_targets: {tree}: Python imports gpuops from {found.stdout.strip() or found.stderr.strip()!r}, "
                 "not from this tree")


def run_targets(tree: Path, options: list[str], json_path: Path) -> None:
    started = time.perf_counter()
    with open(json_path.with_suffix(".txt"), "w", encoding="utf-8") as table:
        status = subprocess.run([sys.executable, "-m", "gpuops.bench", "targets", *options, "-q", "--json",
                                 str(json_path.resolve())], cwd=tree, env=environment(tree), stdout=table,
                                stderr=subprocess.STDOUT).returncode
    print(f"{json_path.stem}: {tree}, {time.perf_counter() - started:.0f} s, status {status}", flush=True)
    if status != 0:
        sys.exit(f"ab_targets: the targets run of {tree} ended with status {status}; see "
                 f"{json_path.with_suffix('.txt')}")


def pool_runs(out: Path, name: str) -> Path:
    paths = sorted(out.glob(f"{name}-*.json"), key=lambda p: int(p.stem.rsplit("-", 1)[1]))
    if not paths:
        sys.exit(f"ab_targets: no {name}-*.json in {out}")
    documents = [json.loads(path.read_text(encoding="utf-8")) for path in paths]
    target = out / f"{name}.json"
    target.write_text(json.dumps(targets.pool(documents, [path.name for path in paths]), indent=1) + "\n",
                      encoding="utf-8")
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(usage="%(prog)s BEFORE_TREE AFTER_TREE --out DIR [--rounds K] [--fail-above PCT] "
                                           "-- TARGETS_OPTIONS", description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path, help="the gpuops tree before the change")
    parser.add_argument("after", type=Path, help="the gpuops tree after it")
    parser.add_argument("--out", type=Path, required=True, help="where the runs and the pooled documents go")
    parser.add_argument("--rounds", type=int, default=3, help="rounds to add (default 3; 0: pool and compare)")
    parser.add_argument("--fail-above", metavar="PCT", help="compare's --fail-above, e.g. 2%%")
    parser.epilog = "TARGETS_OPTIONS, after --: gpuops-bench targets' options, e.g. --only contiguous --match '^sign '"
    argv = sys.argv[1:] if argv is None else argv
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split])
    args.targets_options = argv[split + 1:]
    trees = {"before": args.before, "after": args.after}
    args.out.mkdir(parents=True, exist_ok=True)
    if args.rounds:
        for tree in trees.values():
            check_tree(tree)
    done = rounds_in(args.out)
    for number in range(done + 1, done + args.rounds + 1):
        for name in order(number):
            run_targets(trees[name], args.targets_options, args.out / f"{name}-{number}.json")
    pooled = [pool_runs(args.out, name) for name in TREES]
    compare = ["compare", *map(str, pooled)] + (["--fail-above", args.fail_above] if args.fail_above else [])
    return cli.main(compare)


if __name__ == "__main__":
    sys.exit(main())
