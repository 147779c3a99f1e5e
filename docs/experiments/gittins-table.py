#!/usr/bin/env python3
"""Gittins index table of the non-deadline jobs' GPU time, from a `--jobs-csv` of an ideal run.

EXPERIMENT ONLY (docs/tias.md, "Session 12"). It reads the true lengths, so the table it
prints is *prior knowledge* of the workload's distribution, which TIAS does not have; it
measures what a Gittins-index order could gain at best, not a blind result.

Input: a jobs CSV of `gantry simulate … --order fifo --speed-model ideal --cluster 32x8x8`
(every job starts at once, so `jct_s` is its length). Output, for GANTRY_GIT of
docs/experiments/tias-session12-knobs.patch: `attained_gpu_ms:index,…`, at most 64 pairs,
the index scaled by 1e12.

Gittins index at attained service a (Gittins 1979; Tiresias, NSDI 2019, section 4.1):
    G(a) = max over b > a of P(a < S <= b) / E[min(S, b) - a | S > a]
with S the GPU time, over a grid of a and b 60 s x 2^(i/2) GPU-seconds.
"""
import csv
import sys

samples = sorted(
    int(r["gpus"]) * float(r["jct_s"])
    for r in csv.DictReader(open(sys.argv[1]))
    if not r["deadline_s"]
)
grid = [0] + [60 * 2 ** (i / 2) for i in range(40)]
grid = [g for g in grid if g < samples[-1]]
pairs = []
for a in grid:
    alive = [x for x in samples if x > a]
    if not alive:
        break
    best = 0.0
    for b in grid + [samples[-1]]:
        if b <= a:
            continue
        finished = sum(1 for x in alive if x <= b)
        spent = sum(min(x, b) - a for x in alive)
        if spent > 0:
            best = max(best, finished / spent)
    pairs.append((int(a * 1000), int(best * 1e12)))
print(",".join(f"{a}:{g}" for a, g in pairs[:64]))
