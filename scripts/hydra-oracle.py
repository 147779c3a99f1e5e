#!/usr/bin/env python3
"""What meeting the deadlines of Hydra's batch sets costs the non-deadline jobs, for a
scheduler that knows every deadline job's length (docs/tias.md, "Where it falls short").

Hydra's PAI sets submit 5,000 one-GPU jobs at t = 0; 20 % or 30 % have a deadline. The
development grid asks TIAS to miss at most EDF's + 0.005 there and to keep the non-deadline
average JCT within 1.005 x gantry's 2D-LAS. This script measures the best we know a
scheduler can do with far more information than TIAS has:

  * every deadline job's exact length, used to plan all of them as late as possible on the G
    GPUs (a backward list schedule: latest deadline first, each on the GPU that stays free
    the latest), each run only from its planned start, ahead of every other job;
  * for the other jobs, either gantry's 2D-LAS or the Gittins index of the *true* size
    distribution (the best order that does not read a job's own length), with bins
    2^(1/BINS_PER_OCTAVE) apart.

One-GPU jobs on identical GPUs at full speed make the simulation exact and small: at every
event the G best-ranked live jobs run (preemption free, as in `gantry simulate`), events
being finishes, 2D-LAS threshold or size-bin crossings and planned starts. The script also
runs gantry's `las` (2D-LAS, thresholds 3,250 / 7,200 / 18,000 GPU·s, FIFO by queue entry,
then id) and `edf`; on both sets they give `gantry compare`'s misses and non-deadline JCT
to the second, which checks the simulation against gantry's.

  scripts/hydra-oracle.py ../shared/traces/hydra-pai-deadline/20_ddl.csv --gpus 256

Needs numpy (pip install numpy). About a minute per set (the Gittins run).
"""
import argparse
import csv
import heapq

import numpy as np

LAS_THRESHOLDS_S = np.array([3250.0, 7200.0, 18000.0])
EPS = 1e-6
# The class of a deadline job waiting for its planned start: below every other job.
WAITING_CLASS = 99


def load(path):
    """Run times (the A100 column, gantry's default) and absolute deadlines (inf: none)."""
    durations, deadlines = [], []
    with open(path, newline="") as f:
        for line, row in enumerate(csv.DictReader(f), start=2):
            if float(row["norm_job_submit_time"]) != 0:
                raise SystemExit(f"{path}:{line}: norm_job_submit_time is not 0; this script needs a batch set")
            durations.append(float(row["A100"]))
            deadlines.append(np.inf if row["ddl"] == "inf" else float(row["ddl"]))
    return np.array(durations), np.array(deadlines)


def latest_starts(durations, deadlines, gpus):
    """Each deadline job's start in a backward list schedule: deadlines latest first, each
    job ending at its deadline or when the GPU that stays free the latest is next needed."""
    starts = np.full(len(durations), np.inf)
    free_until = [-np.inf] * gpus  # max-heap of "free until" times, negated
    for job in np.argsort(-deadlines, kind="stable"):
        if not np.isfinite(deadlines[job]):
            continue
        until = -heapq.heappop(free_until)
        starts[job] = min(deadlines[job], until) - durations[job]
        heapq.heappush(free_until, -starts[job])
    return starts


def gittins_table(durations, edges):
    """G(a) = max_b P(a < S <= b) / E[min(S, b) - a | S > a] at each bin's lower edge."""
    table = np.zeros(len(edges) - 1)
    for i, a in enumerate(edges[:-1]):
        alive = durations[durations > a]
        if len(alive) == 0:
            continue
        for b in edges[i + 1:]:
            expected = (np.minimum(alive, b) - a).mean()
            if expected > 0:
                table[i] = max(table[i], (alive <= b).mean() / expected)
    return table


class Run:
    """One simulation: `rank(t, live)` returns the live jobs' sort keys (lexsort order,
    last key first), `next_change(t, running)` the next time a key changes by itself.
    With `planned` starts, deadline jobs wait for them and then run first, by deadline."""

    def __init__(self, durations, deadlines, gpus, planned=None):
        self.durations, self.deadlines, self.gpus = durations, deadlines, gpus
        self.remaining = durations.copy()
        self.attained = np.zeros(len(durations))
        self.ids = np.arange(len(durations))
        self.has_deadline = np.isfinite(deadlines)
        self.deferred = self.has_deadline & (planned is not None)
        self.planned = planned if planned is not None else np.full(len(durations), -np.inf)

    def plan_keys(self, t, jobs, rest_class):
        """The plan's two most significant keys: (by deadline, class), class 0 for a
        deadline job at or past its planned start, WAITING_CLASS before it, and
        `rest_class` for the other jobs."""
        due = self.deferred[jobs] & (t >= self.planned[jobs] - EPS)
        waits = self.deferred[jobs] & ~due
        klass = np.where(due, 0, np.where(waits, WAITING_CLASS, rest_class))
        return np.where(due, self.deadlines[jobs], 0), klass

    def next_planned_start(self, t, jobs):
        """The earliest planned start after `t` among `jobs` (inf: none)."""
        starts = self.planned[jobs]
        return starts[starts > t + EPS].min(initial=np.inf)

    def simulate(self, rank, next_change, on_advance):
        done = np.full(len(self.durations), np.nan)
        live = np.ones(len(self.durations), bool)
        t = 0.0
        while live.any():
            jobs = np.where(live)[0]
            running = jobs[np.lexsort(rank(t, jobs))[: self.gpus]]
            until = min(t + self.remaining[running].min(), next_change(t, jobs, running))
            self.remaining[running] -= until - t
            self.attained[running] += until - t
            t = until
            on_advance(t, running)
            finished = running[self.remaining[running] <= EPS]
            done[finished] = t
            live[finished] = False
        met = done <= self.deadlines + EPS
        miss_rate = 1.0 - met[self.has_deadline].mean()
        return miss_rate, done[~self.has_deadline].mean()


def las(durations, deadlines, gpus, planned=None):
    """gantry's 2D-LAS; with `planned` starts, deadline jobs wait for them and then run
    first, by deadline."""
    run = Run(durations, deadlines, gpus, planned)
    queue = np.zeros(len(durations), int)
    entered = np.zeros(len(durations))

    def rank(t, jobs):
        return (run.ids[jobs], entered[jobs], *run.plan_keys(t, jobs, 1 + queue[jobs]))

    def next_change(t, jobs, running):
        below = queue[running] < len(LAS_THRESHOLDS_S)
        crossing = LAS_THRESHOLDS_S[queue[running][below]] - run.attained[running][below]
        return min(t + crossing.min(initial=np.inf), run.next_planned_start(t, jobs))

    def on_advance(t, running):
        for q, threshold in enumerate(LAS_THRESHOLDS_S):
            crossed = running[(queue[running] == q) & (run.attained[running] >= threshold - EPS)]
            queue[crossed] = q + 1
            entered[crossed] = t

    return run.simulate(rank, next_change, on_advance)


def edf(durations, deadlines, gpus):
    """gantry's EDF: deadline jobs by deadline, then the rest, ties by id."""
    run = Run(durations, deadlines, gpus)
    return run.simulate(
        lambda t, jobs: (run.ids[jobs], deadlines[jobs]),
        lambda t, jobs, running: np.inf,
        lambda t, running: None,
    )


def gittins(durations, deadlines, gpus, planned, bins_per_octave):
    """Deadline jobs at their planned starts, the rest by the Gittins index of the true
    distribution of every job's length."""
    run = Run(durations, deadlines, gpus, planned)
    top = durations.max() * 2
    octaves = np.arange(0, np.log2(top / 60.0) * bins_per_octave + 1) / bins_per_octave
    edges = np.concatenate(([0.0], 60.0 * 2**octaves, [np.inf]))
    table = gittins_table(durations, edges)
    binned = np.zeros(len(durations), int)

    def rank(t, jobs):
        return (run.ids[jobs], -table[binned[jobs]], *run.plan_keys(t, jobs, 1))

    def next_change(t, jobs, running):
        crossing = edges[binned[running] + 1] - run.attained[running]
        return min(t + crossing.min(), run.next_planned_start(t, jobs))

    def on_advance(t, running):
        while True:
            crossed = running[run.attained[running] >= edges[binned[running] + 1] - EPS]
            if len(crossed) == 0:
                return
            binned[crossed] += 1

    return run.simulate(rank, next_change, on_advance)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace", help="a Hydra deadline set (20_ddl.csv or 30_ddl.csv)")
    ap.add_argument("--gpus", type=int, default=256)
    ap.add_argument("--bins-per-octave", type=int, default=4)
    ap.add_argument("--assumed-share", type=float, default=1 / 1.2)
    args = ap.parse_args()
    durations, deadlines = load(args.trace)
    planned = latest_starts(durations, deadlines, args.gpus)
    # Every job is submitted at t = 0, so a deadline is also the job's window.
    assumed = np.where(np.isfinite(deadlines), args.assumed_share * deadlines, durations)
    planned_blind = latest_starts(assumed, deadlines, args.gpus)
    rows = [
        ("las (gantry's 2D-LAS)", las(durations, deadlines, args.gpus)),
        ("edf", edf(durations, deadlines, args.gpus)),
        ("deadline jobs at planned starts, rest by 2D-LAS", las(durations, deadlines, args.gpus, planned)),
        (
            "deadline jobs at planned starts, rest by true Gittins index",
            gittins(durations, deadlines, args.gpus, planned, args.bins_per_octave),
        ),
        (
            f"deadline jobs planned from {args.assumed_share:.3f} x window, rest by 2D-LAS",
            las(durations, deadlines, args.gpus, planned_blind),
        ),
    ]
    las_jct = rows[0][1][1]
    print(f"| {args.trace.rsplit('/', 1)[-1]} on {args.gpus} GPUs | miss rate | non-deadline JCT (s) | / LAS |")
    print("|---|---|---|---|")
    for name, (miss_rate, jct) in rows:
        print(f"| {name} | {miss_rate:.3f} | {jct:.0f} | {jct / las_jct:.3f} |")


if __name__ == "__main__":
    main()
