#!/usr/bin/env python3
"""Lower bound on the non-deadline average JCT that ANY scheduler can reach on a trace while
missing at most a given number of deadlines (issue 11's question: can one schedule have
both EDF's miss rate and LAS's non-deadline JCT?).

A time-indexed linear relaxation, solved with HiGHS (scipy). Every schedule the simulator can
produce is feasible for it, so its optimum is a valid lower bound:
  * the cluster is one pool of G GPUs: a job may use any 0..k of them at any moment (no
    gangs, no placement, no topology; the simulator's speed is never above 1);
  * a job runs only after its submission; a met deadline job gets all its GPU time inside
    [submit, deadline]; a missed one is dropped entirely (its work simply disappears);
  * which jobs miss is relaxed to a fraction y_j in [0, 1] with sum(y) <= the allowed misses;
    a job with duration > window is always missed (y_j = 1);
  * a job's completion is bounded by its mean busy time: C_j >= M_j + p_j / 2 for a job
    served at a rate of at most k_j GPUs (equality when it runs at full rate to the end),
    with M_j taken at each slot's start (or the submission, if later), which only lowers it.
  * time ends at a horizon with room, after the last submission, for all the work and the
    longest job; work a schedule does later can be moved before it, which only lowers M_j.

Input: a `gantry simulate --speed-model ideal --jobs-csv` file of the same workload on a
cluster large enough that nothing waits (so jct = duration at full speed), see docs/tias.md.

  scripts/tias-bound.py JOBS.csv --gpus 512 --max-misses 89   # bound the non-deadline JCT
  scripts/tias-bound.py JOBS.csv --gpus 256 --min-misses       # bound the misses

Needs scipy (pip install scipy).
"""
import argparse
import csv
import sys

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog


def slots(horizon_s, fine_s, fine_until_s, coarse_s):
    """Slot start times: fine_s wide until fine_until_s, then coarse_s wide to the horizon."""
    starts, t = [], 0.0
    while t < horizon_s:
        starts.append(t)
        t += fine_s if t < fine_until_s else coarse_s
    starts.append(t)
    return np.array(starts)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("jobs_csv")
    ap.add_argument("--gpus", type=int, required=True)
    goal = ap.add_mutually_exclusive_group(required=True)
    goal.add_argument("--max-misses", type=int,
                      help="deadline misses allowed (e.g. floor((EDF rate + 0.005) x deadline "
                           "jobs)): bound the non-deadline average JCT")
    goal.add_argument("--min-misses", action="store_true",
                      help="bound the number of deadline misses instead (non-deadline jobs free)")
    ap.add_argument("--fine-s", type=float, default=600)
    ap.add_argument("--fine-until-h", type=float, default=72)
    ap.add_argument("--coarse-s", type=float, default=3600)
    args = ap.parse_args()

    jobs = []
    for r in csv.DictReader(open(args.jobs_csv)):
        if float(r["waiting_s"]) > 0:
            sys.exit(f"job {r['job']} waited: run the ideal-speed pass on a larger cluster")
        s = float(r["submit_s"])
        p = float(r["jct_s"])
        d = float(r["deadline_s"]) if r["deadline_s"] else None
        jobs.append((s, p, int(r["gpus"]), d))
    nd = [j for j in jobs if j[3] is None]
    dl = [j for j in jobs if j[3] is not None]
    work = sum(p * k for _, p, k, _ in jobs)
    horizon = max(s for s, *_ in jobs) + work / args.gpus + max(p for _, p, _, _ in jobs) + 3600
    t = slots(horizon, args.fine_s, args.fine_until_h * 3600, args.coarse_s)
    n_slots = len(t) - 1
    print(f"{len(nd)} non-deadline, {len(dl)} deadline jobs, {n_slots} slots to {horizon / 3600:.0f} h",
          file=sys.stderr)

    cols_job, cols_slot, ub, cost = [], [], [], []
    work_rows = []  # (job row, value)
    y_cols = []
    infeasible = 0
    for i, (s, p, k, d) in enumerate(jobs):
        end = d if d is not None else horizon
        if d is not None and d - s < p:
            infeasible += 1
        first = max(0, np.searchsorted(t, s, side="right") - 1)
        for q in range(first, n_slots):
            lo, hi = max(t[q], s), min(t[q + 1], end)
            if hi <= lo:
                if t[q] >= end:
                    break
                continue
            cols_job.append(i)
            cols_slot.append(q)
            ub.append(k * (hi - lo))
            # mean-busy-time weight: time of this slot's work, per unit of the job's work,
            # averaged over the non-deadline jobs
            cost.append(lo * 3600 / (p * k) / len(nd) if d is None else 0.0)
    n_x = len(cols_job)
    dl_index = [i for i, j in enumerate(jobs) if j[3] is not None]
    n_y = len(dl_index)
    print(f"{n_x} variables, {infeasible} deadline jobs no schedule can meet", file=sys.stderr)

    # equality, in GPU-hours: sum_t x_jt + y_j w_j = w_j (y only for deadline jobs)
    rows = np.array(cols_job)
    a_eq = sp.csr_matrix((np.ones(n_x), (rows, np.arange(n_x))), shape=(len(jobs), n_x + n_y))
    y_rows = np.array(dl_index)
    y_vals = np.array([jobs[i][1] * jobs[i][2] / 3600.0 for i in dl_index])
    a_eq = a_eq + sp.csr_matrix((y_vals, (y_rows, n_x + np.arange(n_y))), shape=a_eq.shape)
    b_eq = np.array([p * k / 3600.0 for _, p, k, _ in jobs])
    # capacity per slot, and the miss budget
    a_cap = sp.csr_matrix((np.ones(n_x), (np.array(cols_slot), np.arange(n_x))),
                          shape=(n_slots, n_x + n_y))
    b_cap = args.gpus * np.diff(t)
    a_miss = sp.csr_matrix((np.ones(n_y), (np.zeros(n_y, dtype=int), n_x + np.arange(n_y))),
                           shape=(1, n_x + n_y))
    a_ub = sp.vstack([a_cap, a_miss]).tocsr()
    if args.min_misses:
        # fewest misses: minimise sum(y), no budget row
        cost = [0.0] * n_x
        a_ub = a_cap.tocsr()
    y_lo = [1.0 if jobs[i][3] - jobs[i][0] < jobs[i][1] else 0.0 for i in dl_index]
    c = np.concatenate([np.array(cost), np.ones(n_y) if args.min_misses else np.zeros(n_y)])
    # GPU-seconds are large: solve in GPU-hours (the cost's time stays in seconds)
    scale = 3600.0
    b_ub = b_cap / scale if args.min_misses else np.concatenate([b_cap / scale, [args.max_misses]])
    res = linprog(c, A_ub=a_ub, b_ub=b_ub,
                  A_eq=a_eq, b_eq=b_eq,
                  bounds=[(0, u / scale) for u in ub] + [(lo, 1.0) for lo in y_lo],
                  method="highs")
    if res.status != 0:
        sys.exit(f"LP not solved: {res.message}")
    if args.min_misses:
        print(f"deadline misses lower bound: {res.fun:.1f} of {len(dl)} "
              f"(rate {res.fun / len(dl):.4f}; {infeasible} are infeasible)")
        return
    const = sum(p / 2 - s for s, p, k, d in nd) / len(nd)
    bound = res.fun + const
    mean_p = sum(p for _, p, _, _ in nd) / len(nd)
    misses = res.x[n_x:].sum()
    # C_j >= s_j + p_j holds job by job too; the slots' rounding can leave the LP below it
    bound = max(bound, mean_p)
    print(f"non-deadline avg JCT lower bound: {bound:.0f} s "
          f"(their mean duration alone: {mean_p:.0f} s; fractional misses used: {misses:.1f})")


if __name__ == "__main__":
    main()
