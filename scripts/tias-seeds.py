#!/usr/bin/env python3
"""The TIAS grid over seeds (docs/tias.md, "Across seeds").

`scripts/tias-grid.sh` runs each configuration once, with seed 0. The seed decides which
jobs keep their deadlines (`--keep-deadlines`), which get synthetic ones (`--deadlines`) and
the placers' random choices, so one seed can pass or fail a row by its draw. This script runs
every configuration of the grid with seeds 0..N-1 (the orders EDF, `las`,
`tiresias-dlas-gpu` and `tias`) and prints one markdown row per configuration: how many seeds
meet each of the grid's targets (TIAS misses <= EDF's + 0.005; TIAS non-deadline average JCT
<= 1.005 x the better of `las` and `tiresias-dlas-gpu`) and the spread of the JCT ratio.

    scripts/tias-seeds.py --seeds 10                 # the development grid
    scripts/tias-seeds.py --seeds 10 --held-out      # the held-out check
    scripts/tias-seeds.py --seeds 10 --tias-config examples/tias-deadlines-first.toml

Needs target/release/gantry (cargo build --release -p gantry) and ../shared/traces. Runs
two configurations at a time.
"""
import argparse
import json
import shlex
import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ORDERS = "edf,las,tiresias-dlas-gpu,tias"
MISS_SLACK = 0.005
JCT_SLACK = 1.005


def grid(held_out):
    """The grid's configurations, `(name, flags)`, from `scripts/tias-grid.sh --list`."""
    listing = subprocess.run(
        ["bash", "scripts/tias-grid.sh"] + (["--held-out"] if held_out else []) + ["--list"],
        cwd=REPO, capture_output=True, text=True, check=True,
    ).stdout
    return [tuple(line.split("|", 1)) for line in listing.splitlines() if "|" in line]


def run(gantry, flags, seed, tias_config):
    """One `gantry compare` of the four orders; returns (misses ok, JCT ok, JCT ratio)."""
    command = [gantry, "compare", *shlex.split(flags), "--seed", str(seed), "--orders", ORDERS,
               "--placements", "best-fit", "--json"]
    if tias_config:
        command += ["--tias-config", tias_config]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"tias-seeds: {' '.join(command)} failed:\n{done.stderr}")
    by_order = {report["order"]: report for report in json.loads(done.stdout)}
    # A file that sets `deadline_safety` renames the order (`tias-deadline-safe`).
    tias = next(r for name, r in by_order.items() if name.startswith("tias"))
    best_las = min(by_order["las"]["avg_jct_nondeadline_s"],
                   by_order["tiresias-dlas-gpu"]["avg_jct_nondeadline_s"])
    ratio = tias["avg_jct_nondeadline_s"] / best_las
    misses_ok = tias["deadline_miss_rate"] <= by_order["edf"]["deadline_miss_rate"] + MISS_SLACK
    return misses_ok, ratio <= JCT_SLACK, ratio


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=10, help="seeds 0..N-1 (default 10)")
    parser.add_argument("--held-out", action="store_true", help="the held-out configurations")
    parser.add_argument("--tias-config", help="a --tias-config file for TIAS")
    parser.add_argument("--gantry", default="target/release/gantry")
    args = parser.parse_args()
    configurations = grid(args.held_out)
    jobs = [(name, flags, seed) for name, flags in configurations for seed in range(args.seeds)]
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda j: run(args.gantry, j[1], j[2], args.tias_config), jobs))
    print(f"seeds 0..{args.seeds - 1}" + (f", TIAS constants from {args.tias_config}" if args.tias_config else ""))
    print()
    print("| configuration | seeds within misses | within JCT | within both | TIAS / best LAS: min / median / max |")
    print("|---|---:|---:|---:|---|")
    totals = [0, 0, 0]
    for name, _ in configurations:
        rows = [r for (n, _, _), r in zip(jobs, results) if n == name]
        misses = sum(r[0] for r in rows)
        jct = sum(r[1] for r in rows)
        both = sum(r[0] and r[1] for r in rows)
        ratios = sorted(r[2] for r in rows)
        median = statistics.median(ratios)
        totals = [totals[0] + misses, totals[1] + jct, totals[2] + both]
        print(f"| {name} | {misses} | {jct} | {both} | {ratios[0]:.3f} / {median:.3f} / {ratios[-1]:.3f} |")
    print(f"| all ({len(jobs)} runs) | {totals[0]} | {totals[1]} | {totals[2]} | |")


if __name__ == "__main__":
    main()
