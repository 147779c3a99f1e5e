#!/usr/bin/env python3
"""Helper of scripts/slurm-bench.sh (read that first).

  slurm-bench.py gen SEED JOBS PHILLY_CSV [--rate R] [--ckpt-share F] [--ckpt-interval C]
                                                a seeded job mix as JSON (stdout)
  slurm-bench.py submit PLAN JOBSH IDS [--hold] [--start-at T]
                                                submit the mix with its arrival offsets (from
                                                Unix time T, default now)
  slurm-bench.py pass LOG PARTITION             wake Slurm's backfill thread and print when its
                                                next pass began (Unix time, from LOG, the
                                                lab's slurmctld.log with DebugFlags=Backfill)
  slurm-bench.py metrics SQUEUE_JSON IDS PLAN RUNS GPUS   one JSON line of metrics
  slurm-bench.py trace PLAN                     the mix as a gantry trace (ElasticFlow CSV)
  slurm-bench.py terms PLAN                     its terms for `gantry simulate --job-terms`
  slurm-bench.py latency GANTRY JOURNAL RUNS    the lab's start/restart/finish latencies (JSON)
  slurm-bench.py waits DIR ORDER                per job, its wait to start under Slurm alone and
                                                under ORDER, from a bench folder's runs
  slurm-bench.py accept DIR                     issue 35's acceptance points for each gantry
                                                run of DIR/metrics.jsonl against the median of
                                                its Slurm-alone runs (and how many of those
                                                runs each point holds against), and the
                                                simulated against the measured (DIR/RUN.sim.json)

The mix (every draw from one seeded generator, so a seed names one mix):
- arrivals: Poisson, R jobs/s (default 0.2);
- GPUs: 1/2/4/8 with weights 40/25/20/15 (Philly's own mix is 93 % one-GPU jobs, which
  leaves little for a gang scheduler to decide);
- run times: a job's duration drawn from the Philly trace (PHILLY_CSV, `duration` column),
  compressed into 20-300 s by d = 20 s x (D / 60 s)^g, g = ln 15 / ln(100,000 / 60), so
  Philly's 1 min maps to 20 s and 28 h to 300 s, order and heavy tail kept (Philly's median
  19 min becomes about 1 min), clamped to [20, 300] s;
- time limits (`--time`, whole minutes as users give them): the run time times U(1.5, 3),
  rounded up to a minute;
- 30 % with a deadline: submission + time limit + U(0.5, 2) x run time. Slurm cancels a job
  whose time limit from its start ends after its deadline, so such a job must start within
  U(0.5, 2) x its run time of its submission;
- a share F (default 0.5) of the jobs checkpoint every C s of progress (default 30 s, the
  ratio of a 10-minute checkpoint interval to Philly's median job) and resume from their
  last checkpoint after a requeue; they are submitted `--requeue --comment
  gantry:checkpoint`. The rest are plain: a requeue restarts them from zero, and gantry
  never preempts them.
"""
import datetime
import json
import math
import os
import random
import re
import statistics
import subprocess
import sys
import time

GAMMA = math.log(15) / math.log(100_000 / 60)
MARKER = "gantry:checkpoint"


def philly_durations(path):
    with open(path) as f:
        header = f.readline().strip().split(",")
        col = header.index("duration")
        out = []
        for line in f:
            cells = line.strip().split(",")
            if len(cells) > col and cells[col]:
                out.append(float(cells[col]))
    if not out:
        sys.exit(f"{path}: no durations")
    return out


def compress(d):
    return min(300, max(20, int(round(20 * (max(d, 1.0) / 60) ** GAMMA))))


def gen(seed, n, philly, rate, ckpt_share, ckpt_interval):
    durations = philly_durations(philly)
    r = random.Random(seed)
    t = 0.0
    jobs = []
    for i in range(n):
        g = r.choices([1, 2, 4, 8], weights=[40, 25, 20, 15])[0]
        d = compress(r.choice(durations))
        limit_min = max(1, math.ceil(d * r.uniform(1.5, 3) / 60))
        deadline = None
        if r.random() < 0.30:
            deadline = limit_min * 60 + int(round(d * r.uniform(0.5, 2)))
        ckpt = ckpt_interval if r.random() < ckpt_share else 0
        jobs.append(dict(i=i, at=round(t, 3), gpus=g, dur=d, limit_min=limit_min,
                         deadline=deadline, ckpt=ckpt))
        t += r.expovariate(rate)
    return jobs


def submit(plan, jobsh, ids_path, hold, start_at=None):
    t0 = time.time() if start_at is None else start_at
    ids = {}
    times = {}
    for j in plan:
        wait = t0 + j["at"] - time.time()
        if wait > 0:
            time.sleep(wait)
        cmd = ["sbatch", "--parsable", "-o", "/dev/null", "-J", f"w{j['i']}",
               f"--gpus={j['gpus']}", f"--time={j['limit_min']}"]
        if j["ckpt"]:
            cmd += ["--requeue", f"--comment={MARKER}"]
        if hold:
            cmd.append("--hold")
        if j["deadline"]:
            cmd.append(f"--deadline=now+{j['deadline']}")
        cmd += [jobsh, str(j["dur"]), str(j["ckpt"])]
        submitted = time.time()
        out = subprocess.run(cmd, capture_output=True, text=True)
        ids[str(j["i"])] = out.stdout.strip().split(";")[0]
        times[str(j["i"])] = round(submitted, 3)
        if out.returncode:
            print("sbatch failed", j, out.stderr, file=sys.stderr)
    with open(ids_path, "w") as f:
        json.dump(ids, f)
    with open(ids_path + ".times", "w") as f:
        json.dump(times, f)


def percentile(values, q):
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, int(math.ceil(q * len(values))) - 1)]


def read_runs(path):
    """Per job id: its runs as (start, end, kind, saved_s), kind "end" or "kill"; saved_s is
    the progress the run checkpointed (for an end: the whole remaining run)."""
    events = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                p = line.split()
                if len(p) >= 3:
                    events.setdefault(p[1], []).append(p)
    runs = {}
    for job, evs in events.items():
        evs.sort(key=lambda p: float(p[-1]))
        started = None
        for p in evs:
            if p[0] == "start":
                started = float(p[-1])
            elif p[0] in ("kill", "end") and started is not None:
                saved = float(p[2]) if p[0] == "kill" and len(p) >= 4 else None
                runs.setdefault(job, []).append((started, float(p[-1]), p[0], saved))
                started = None
    return runs


def metrics(squeue_path, ids_path, plan_path, runs_path, cluster_gpus):
    """Metrics on the host's clock, to the millisecond: a job's JCT runs from the moment
    sbatch was called for it (IDS.times) to the end its script logged for its final run.
    Slurm's own submit, start and end times are whole seconds, and its ends fall where the
    controller's scheduling loop puts the starts (a job of whole seconds that starts at
    x.01 s ends at y.01 s, one that starts at x.7 s ends at y.7 s): truncated, they shift
    a run's average JCT by up to half a second, by the phase of that loop in that lab.
    Slurm's job states still say what completed; a job missed its deadline if it did not
    complete or its script ended after the deadline."""
    with open(squeue_path) as f:
        sq = {str(j["job_id"]): j for j in json.load(f)["jobs"]}
    with open(ids_path) as f:
        ids = json.load(f)
    with open(plan_path) as f:
        plan = json.load(f)
    gpus = {ids[str(j["i"])]: j["gpus"] for j in plan}
    # Slurm resets a job's submit_time when it requeues it, so a JCT counts from the job's
    # first submission: the time sbatch was called (IDS.times), or, for runs recorded
    # without it, the submitter's start plus the job's arrival offset (the start from the
    # jobs never requeued, whose submit_time is their submission).
    try:
        with open(ids_path + ".times") as f:
            times = {k: float(v) for k, v in json.load(f).items()}
    except FileNotFoundError:
        offsets = sorted(sq[ids[str(j["i"])]]["submit_time"] - j["at"] for j in plan
                         if ids[str(j["i"])] in sq and sq[ids[str(j["i"])]]["restart_cnt"] == 0)
        t0 = offsets[len(offsets) // 2] if offsets else 0
        times = {str(j["i"]): t0 + j["at"] for j in plan}
    runs = read_runs(runs_path)
    jct, ends, subs = [], [], []
    misses = deadline_jobs = restarts = 0
    busy = 0
    states = {}
    for j in plan:
        job = ids[str(j["i"])]
        s = sq.get(job)
        if s is None:
            states["MISSING"] = states.get("MISSING", 0) + 1
            continue
        states[s["job_state"]] = states.get(s["job_state"], 0) + 1
        restarts += s["restart_cnt"]
        submitted = times[str(j["i"])]
        subs.append(submitted)
        completed = s["job_state"] == "COMPLETED"
        # The final run, as its script logged it (Slurm's whole seconds if it did not).
        final = [r for r in runs.get(job, []) if r[2] == "end"]
        start, end = (final[-1][0], final[-1][1]) if final else (s["start_time"], s["end_time"])
        if completed:
            jct.append(round(end - submitted, 3))
            ends.append(end)
            busy += j["gpus"] * (end - start)
        if j["deadline"]:
            deadline_jobs += 1
            if not completed or end > s["deadline"]:
                misses += 1
    # Killed runs (job script's log): GPU time held minus the progress they checkpointed.
    wasted = 0.0
    for job, job_runs in runs.items():
        for start, end, kind, saved in job_runs:
            if kind == "kill":
                wasted += max(0.0, (end - start) - (saved or 0.0)) * gpus.get(job, 0)
    makespan = round(max(ends) - min(subs), 2) if ends else None
    out = dict(
        jobs=len(plan),
        states=states,
        makespan_s=makespan,
        avg_jct_s=round(sum(jct) / len(jct), 2) if jct else None,
        p95_jct_s=percentile(jct, 0.95),
        deadline_jobs=deadline_jobs,
        deadline_misses=misses,
        utilisation=round(busy / (cluster_gpus * makespan), 3) if makespan else None,
        restarts=restarts,
        wasted_gpu_s=round(wasted, 1),
    )
    print(json.dumps(out))


def latency(gantry, journal, runs_path):
    """The lab's latencies from one `gantry slurm` run: gantry's journal (`gantry replay
    --dump`: when the core decided each start, preemption and finish, epoch ms) against the
    job script's run log (when each run really started, was killed, ended)."""
    dump = subprocess.run([gantry, "replay", "--dump", journal], capture_output=True,
                          text=True, check=True).stdout
    starts, preempts, finishes = {}, {}, {}
    for line in dump.splitlines():
        m = re.match(r"\s*\d+ t=(\d+)ms\s+(.*?)\s*->\s*(.*)$", line)
        if not m:
            continue
        t = int(m.group(1)) / 1000
        f = re.match(r"finish job (\d+)", m.group(2))
        if f:
            finishes[f.group(1)] = t
        for d in m.group(3).split(";"):
            s = re.search(r"start job (\d+)", d)
            if s:
                starts.setdefault(s.group(1), []).append(t)
            p = re.search(r"preempt job (\d+)", d)
            if p:
                preempts.setdefault(p.group(1), []).append(t)
    first, again, seen, killed = [], [], [], []
    for job, runs in read_runs(runs_path).items():
        for n, (start, end, kind, _) in enumerate(runs):
            decided = starts.get(job, [])
            if n < len(decided):
                (first if n == 0 else again).append(start - decided[n])
            if kind == "end" and job in finishes:
                seen.append(finishes[job] - end)
        kills = [end for _, end, kind, _ in runs if kind == "kill"]
        killed += [k - p for p, k in zip(preempts.get(job, []), kills)]

    def stats(x):
        x = sorted(x)
        return dict(n=len(x), p50_s=percentile(x, 0.5), mean_s=round(sum(x) / len(x), 2) if x else None,
                    max_s=x[-1] if x else None)

    print(json.dumps(dict(start=stats(first), restart=stats(again), finish_seen=stats(seen),
                          kill=stats(killed))))


def first_waits(folder, name):
    """Per job index of the mix: the seconds from its `sbatch` call to its script's first
    start in run NAME of a bench folder (None if it never started)."""
    with open(f"{folder}/{name}.ids") as f:
        ids = json.load(f)
    with open(f"{folder}/{name}.ids.times") as f:
        times = json.load(f)
    runs = read_runs(f"{folder}/{name}.runs")
    return {int(i): (runs[j][0][0] - times[i] if j in runs else None) for i, j in ids.items()}


def waits(folder, order):
    """Where an order's jobs start later or earlier than Slurm alone's: one row per job (its
    GPUs, run time, both waits, the difference), then the mean difference over the jobs
    Slurm alone started within 2 s of their submission (they found their GPUs free) and over
    the others (they started at an end)."""
    with open(f"{folder}/plan.json") as f:
        plan = json.load(f)
    alone, ours = first_waits(folder, "slurm"), first_waits(folder, order)
    print(f"job gpus run_s slurm_wait_s {order}_wait_s difference_s")
    groups = {"at submission": [], "after an end": []}
    for i in sorted(alone):
        if alone[i] is None or ours.get(i) is None:
            print(f"{i:3d} {plan[i]['gpus']:4d} {plan[i]['dur']:5d} never started in one run")
            continue
        difference = ours[i] - alone[i]
        groups["at submission" if alone[i] < 2 else "after an end"].append(difference)
        print(f"{i:3d} {plan[i]['gpus']:4d} {plan[i]['dur']:5d} {alone[i]:12.2f} "
              f"{ours[i]:{len(order) + 7}.2f} {difference:12.2f}")
    for group, values in groups.items():
        if values:
            print(f"{group}: {len(values)} jobs, mean difference {sum(values) / len(values):.3f} s")


def trace(plan):
    """The mix as an ElasticFlow/ITP CSV (`gantry simulate --format elasticflow`): seconds,
    absolute deadlines (none: empty)."""
    print("job_id,submission_time,duration,num_gpu,deadline")
    for j in plan:
        deadline = "" if j["deadline"] is None else f"{j['at'] + j['deadline']:.3f}"
        print(f"{j['i'] + 1},{j['at']:.3f},{j['dur']},{j['gpus']},{deadline}")


def terms(plan):
    """Each job's preemption class and time limit, in trace order (`--job-terms`)."""
    print("preemption,time_limit_s")
    for j in plan:
        cls = "checkpointing" if j["ckpt"] else "never"
        print(f"{cls},{j['limit_min'] * 60}")


def backfill_pass(log, partition):
    """When the backfill thread's next pass begins, as Unix time.

    The thread wakes about once a second but runs a pass only when something changed since
    its last one, so an unchanged update of the partition makes it run one; with
    DebugFlags=Backfill it logs `_attempt_backfill: beginning` with the time to the
    millisecond. Its later passes keep that phase (a second of sleep plus the pass), drifting
    by the passes' own work, so the bench starts both labs' submissions the same time after
    such a pass: a job submitted just before a pass then meets it in both labs or in neither.
    """
    seen = os.path.getsize(log)
    subprocess.run(["scontrol", "update", f"PartitionName={partition}", "State=UP"],
                   check=True, capture_output=True)
    deadline = time.time() + 10
    while time.time() < deadline:
        with open(log) as f:
            f.seek(seen)
            for line in f:
                m = re.match(r"\[(\S+)\] sched/backfill: _attempt_backfill: beginning", line)
                if m:
                    return datetime.datetime.fromisoformat(m.group(1)).timestamp()
        time.sleep(0.05)
    sys.exit(f"no backfill pass in {log} within 10 s (DebugFlags=Backfill?)")


def is_slurm_alone(name):
    """Whether a metrics row is a run of Slurm alone (`slurm`, `slurm-2`, ...)."""
    return name == "slurm" or name.startswith("slurm-")


def accept(folder):
    """Prints issue 35's acceptance points for each gantry run in FOLDER: average JCT and
    deadline misses at most Slurm alone's, makespan at most 1.05 x Slurm alone's, judged
    against the median of the Slurm-alone runs (Slurm's backfill schedules one mix
    differently from run to run; gantry's runs repeat), with how many of those runs each
    point holds against; and the simulator's makespan and average JCT within 10 % of the
    run's (from FOLDER/RUN.sim.json, written by slurm-bench.sh's table)."""
    with open(os.path.join(folder, "metrics.jsonl")) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    alone = [r for r in rows if is_slurm_alone(r["run"])]
    if not alone:
        print("no run of Slurm alone in this folder: nothing to judge against")
        return
    keys = {"makespan": "makespan_s", "avg JCT": "avg_jct_s", "misses": "deadline_misses"}
    median = {k: statistics.median(r[v] for r in alone) for k, v in keys.items()}

    def values(key):
        return " / ".join(f"{r[keys[key]]:g}" for r in alone)

    print(f"Slurm alone, {len(alone)} run{'s' if len(alone) > 1 else ''}: "
          + "; ".join(f"{k} {values(k)} (median {median[k]:g})" for k in keys))
    # Each point: the metric (a key of `keys`) and the factor on Slurm alone's value.
    points = [("avg JCT", 1.0), ("misses", 1.0), ("makespan", 1.05)]
    for row in rows:
        if is_slurm_alone(row["run"]):
            continue
        print(f"{row['run']} against Slurm alone's median (and the runs of Slurm alone it holds against):")
        for label, factor in points:
            key = keys[label]
            bound = factor * median[label]
            held = sum(row[key] <= factor * r[key] for r in alone)
            scale = f"{factor:g} x " if factor != 1.0 else ""
            verdict = "yes" if row[key] <= bound else "NO"
            print(f"  {label} {row[key]:g} <= {scale}{median[label]:g}: {verdict} ({held} of {len(alone)})")
        sim_path = os.path.join(folder, f"{row['run']}.sim.json")
        if not os.path.exists(sim_path):
            print("  simulated: not computed")
            continue
        with open(sim_path) as f:
            sim = json.load(f)
        gaps = [(sim[k] - row[k]) / row[k] for k in ("makespan_s", "avg_jct_s")]
        verdict = "yes" if all(abs(g) <= 0.10 for g in gaps) else "NO"
        print(f"  simulated makespan {sim['makespan_s']:.1f} / avg JCT {sim['avg_jct_s']:.1f} "
              f"within 10 % of the run's: {verdict} ({gaps[0]:+.1%}, {gaps[1]:+.1%})")


def option(args, name, default):
    if name in args:
        return float(args[args.index(name) + 1])
    return default


def main():
    cmd = sys.argv[1]
    args = sys.argv[2:]
    if cmd == "gen":
        plan = gen(int(args[0]), int(args[1]), args[2], option(args, "--rate", 0.2),
                   option(args, "--ckpt-share", 0.5), int(option(args, "--ckpt-interval", 30)))
        json.dump(plan, sys.stdout)
    elif cmd == "submit":
        with open(args[0]) as f:
            plan = json.load(f)
        submit(plan, args[1], args[2], "--hold" in args, option(args, "--start-at", None))
    elif cmd == "pass":
        print(f"{backfill_pass(args[0], args[1]):.3f}")
    elif cmd == "metrics":
        metrics(args[0], args[1], args[2], args[3], int(args[4]))
    elif cmd in ("trace", "terms"):
        with open(args[0]) as f:
            plan = json.load(f)
        (trace if cmd == "trace" else terms)(plan)
    elif cmd == "latency":
        latency(args[0], args[1], args[2])
    elif cmd == "waits":
        waits(args[0], args[1])
    elif cmd == "accept":
        accept(args[0])
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
