#!/usr/bin/env python3
"""Helper of scripts/slurm-bench.sh (read that first).

  slurm-bench.py gen SEED JOBS SCALE            a seeded job mix as JSON (stdout)
  slurm-bench.py submit PLAN JOBSH IDS [--hold] submit the mix with its arrival offsets
  slurm-bench.py metrics SQUEUE_JSON IDS PLAN RUNS GPUS   one JSON line of metrics
  slurm-bench.py trace PLAN                     the mix as a gantry trace (CSV, stdout)

The mix: Poisson arrivals (2.5/s), 1/2/4/8 GPUs (weights 40/25/20/15), run times Pareto
(a = 1.1, 2 s) capped at 30 s then multiplied by SCALE, 30 % with a deadline 60-120 s (x SCALE)
after submission and a time limit of ceil(run time / 60) + 1 minutes (Slurm limits are whole
minutes; the deadline rule needs now + limit <= deadline, so a deadline job's limit is 1 minute
above its run time and its deadline at least that far out).
"""
import json
import math
import os
import random
import subprocess
import sys
import time


def gen(seed, n, scale):
    r = random.Random(seed)
    t = 0.0
    jobs = []
    for i in range(n):
        g = r.choices([1, 2, 4, 8], weights=[40, 25, 20, 15])[0]
        d = min(30, max(2, int(round(2 * (1 - r.random()) ** (-1 / 1.1)))))
        d = max(1, int(round(d * scale)))
        limit_min = math.ceil(d / 60) + 1
        deadline = None
        if r.random() < 0.30:
            deadline = max(int((60 + r.randint(0, 60)) * scale), limit_min * 60 + 5)
        jobs.append(dict(i=i, at=round(t, 3), gpus=g, dur=d, limit_min=limit_min, deadline=deadline))
        t += r.expovariate(2.5)
    return jobs


def submit(plan, jobsh, ids_path, hold):
    t0 = time.time()
    ids = {}
    for j in plan:
        wait = t0 + j["at"] - time.time()
        if wait > 0:
            time.sleep(wait)
        cmd = ["sbatch", "--parsable", "-o", "/dev/null", "-J", f"w{j['i']}",
               f"--gpus={j['gpus']}", f"--time={j['limit_min']}", "--requeue"]
        if hold:
            cmd.append("--hold")
        if j["deadline"]:
            cmd.append(f"--deadline=now+{j['deadline']}")
        cmd += [jobsh, str(j["dur"])]
        out = subprocess.run(cmd, capture_output=True, text=True)
        ids[str(j["i"])] = out.stdout.strip().split(";")[0]
        if out.returncode:
            print("sbatch failed", j, out.stderr, file=sys.stderr)
    with open(ids_path, "w") as f:
        json.dump(ids, f)


def percentile(values, q):
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, int(math.ceil(q * len(values))) - 1)]


def metrics(squeue_path, ids_path, plan_path, runs_path, cluster_gpus):
    with open(squeue_path) as f:
        sq = {str(j["job_id"]): j for j in json.load(f)["jobs"]}
    with open(ids_path) as f:
        ids = json.load(f)
    with open(plan_path) as f:
        plan = json.load(f)
    gpus = {ids[str(j["i"])]: j["gpus"] for j in plan}
    jct, ends, subs = [], [], []
    misses = deadline_jobs = restarts = 0
    busy = 0
    states = {}
    for j in plan:
        s = sq.get(ids[str(j["i"])])
        if s is None:
            states["MISSING"] = states.get("MISSING", 0) + 1
            continue
        states[s["job_state"]] = states.get(s["job_state"], 0) + 1
        restarts += s["restart_cnt"]
        subs.append(s["submit_time"])
        if s["job_state"] == "COMPLETED":
            jct.append(s["end_time"] - s["submit_time"])
            ends.append(s["end_time"])
            busy += j["gpus"] * (s["end_time"] - s["start_time"])
        if j["deadline"]:
            deadline_jobs += 1
            if s["job_state"] != "COMPLETED" or s["end_time"] > s["deadline"]:
                misses += 1
    # Killed runs: from the job script's log (start / kill / end lines).
    runs = {}
    if os.path.exists(runs_path):
        with open(runs_path) as f:
            for line in f:
                p = line.split()
                if len(p) >= 3:
                    runs.setdefault(p[1], []).append((float(p[-1]), p[0]))
    wasted = 0.0
    for job, events in runs.items():
        events.sort()
        started = None
        for t, kind in events:
            if kind == "start":
                started = t
            elif started is not None:
                if kind == "kill":
                    wasted += (t - started) * gpus.get(job, 0)
                started = None
    makespan = (max(ends) - min(subs)) if ends else None
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


def trace(plan):
    """The mix as an ElasticFlow/ITP CSV (`gantry simulate --format elasticflow`): seconds,
    absolute deadlines (none: empty)."""
    print("job_id,submission_time,duration,num_gpu,deadline")
    for j in plan:
        deadline = "" if j["deadline"] is None else f"{j['at'] + j['deadline']:.3f}"
        print(f"{j['i'] + 1},{j['at']:.3f},{j['dur']},{j['gpus']},{deadline}")


def main():
    cmd = sys.argv[1]
    if cmd == "gen":
        json.dump(gen(int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])), sys.stdout)
    elif cmd == "submit":
        with open(sys.argv[2]) as f:
            plan = json.load(f)
        submit(plan, sys.argv[3], sys.argv[4], "--hold" in sys.argv)
    elif cmd == "metrics":
        metrics(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6]))
    elif cmd == "trace":
        with open(sys.argv[2]) as f:
            trace(json.load(f))
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
