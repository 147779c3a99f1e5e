#!/usr/bin/env bash
# gantry on a real Slurm partition against Slurm's own scheduler, on one seeded job mix.
#
#   scripts/slurm-bench.sh [--seed S] [--jobs N] [--rate R] [--ckpt-share F]
#                          [--ckpt-interval C] [--restart-overhead-s O] [--tick-s T]
#                          [--min-run-s Q]
#                          [--orders "tias fifo …"] [--dir DIR] [--gantry BIN] [--no-slurm]
#                          [--slurm-runs K]
#                          [--table-only] [--epilog-ack] [--submit-doorbell]
#                          [--gantry-sched backfill|builtin] [--cred-expire S]
#
# For each run a fresh private lab (scripts/slurm-lab.sh, 4 nodes x 8 GPUs, two racks):
#   slurm   the mix submitted as is to Slurm alone (sched/backfill, priority/multifactor with
#           all weights 0: FIFO priority plus backfill on the jobs' time limits);
#   ORDER   the same mix submitted held and scheduled by `gantry slurm --order ORDER`, for
#           each order asked, on a lab with the same slurm.conf (--gantry-sched builtin:
#           sched/builtin instead). Slurm starts what gantry releases in its next pass, as it
#           starts any job: under sched/backfill that is mostly the backfill thread's pass,
#           under sched/builtin the main loop's; the two loops drift apart by about 1 ms a
#           second, so comparing one with the other shifts the starts more and more as a run
#           goes on (docs/slurm.md, Which pass starts a job).
# Under sched/backfill each run's submissions start 1.5 s after a pass of the backfill thread
# (its passes are logged with DebugFlags=Backfill): without that, the two labs' passes fall
# at different times of the mix, tens of milliseconds apart, and that offset, not the
# scheduler, decides which jobs submitted just before a pass meet it.
# Then one table: makespan, average and p95 JCT (from the sbatch call to the end the job's
# script logs, on the host's clock: Slurm's own times are whole seconds), deadline misses
# (not COMPLETED by --deadline, or cancelled by the deadline rule), GPU utilisation (GPU
# time of completed final runs / (32 x makespan)), Slurm restarts, GPU time of killed runs
# not saved by a checkpoint (from the job script's run log), and, per order, what `gantry
# simulate` predicts for the same mix under the same semantics: the ElasticFlow CSV and the
# per-job terms (`--job-terms`: checkpointing or never, time limit, Slurm's deadline rule)
# written by scripts/slurm-bench.py, cluster 2x2x8, ideal speed (the job sleeps: its
# placement does not change its run time), checkpoints every C s, run quantum Q s (default C
# + 5: a job is not preempted before it saved a checkpoint), restart overhead O s (default
# 1) (Slurm's requeue-to-restart latency on the lab, docs/slurm.md), the wait before a
# requeued job may run again on its old nodes (2 s: gantry skips Slurm's requeue delay there
# once the requeue is 2 s old, whatever cred_expire), the same --tick-s as gantry slurm, and
# --reserve-head (gantry slurm reserves for the queue head by default). --cred-expire S
# sets the labs' cred_expire (default 10; a stock Slurm's is 120).
#
# The mix (scripts/slurm-bench.py, read its docstring): N jobs (default 36), Poisson arrivals
# R/s (0.2), 1/2/4/8 GPUs, run times from the Philly trace compressed into 20-300 s, time
# limits 1.5-3 x the run time in whole minutes, 30 % with a deadline, a share F (0.5) of
# the jobs checkpointing every C s (30) and submitted `--requeue --comment
# gantry:checkpoint`, the rest plain. Each run takes 4-7 minutes; nothing of it is in CI.
# --epilog-ack: gantry's labs run scripts/gantry-epilog.sh as their Epilog and gantry gets
# --epilog-ack-dir (Slurm alone's lab has no epilog, its best case; see docs/slurm.md, Scale).
# --submit-doorbell: gantry's labs also run scripts/gantry-job-submit.lua as their job_submit
# plugin, which rings gantry's doorbell at each submission.
# --slurm-runs K runs Slurm alone K times (rows slurm, slurm-2, …, slurm-K; default 1): its
# backfill schedules one mix differently from run to run (docs/slurm.md), so the acceptance
# lines under the table (slurm-bench.py accept) judge each gantry row against the median of
# those runs and count the runs each point holds against.
# --no-slurm skips the Slurm-alone runs, --table-only every run (the table is printed from the
# runs already in DIR, with the simulated column recomputed by BIN). Each run replaces its
# earlier row in DIR/metrics.jsonl.
# Outputs under DIR (default /tmp/gantry-slurm-bench-SEED): plan, mix.csv, terms.csv, ids,
# squeue JSON, run logs, gantry logs and journals, metrics.jsonl, table.md.
set -euo pipefail
usage() {
    sed -n '4,10p' "$0" | sed 's/^# //' >&2
    exit 64
}
cd "$(dirname "$0")/.."
repo=$(pwd)

seed=42
jobs=36
rate=0.2
ckpt_share=0.5
ckpt_interval=30
restart_overhead=1
tick=60
min_run=""
orders="tias fifo"
dir=""
with_slurm=1
slurm_runs=1
gantry_sched=backfill
cred_expire=10
table_only=0
epilog_ack=0
submit_doorbell=0
gantry="$repo/target/release/gantry"
philly=${PHILLY:-$repo/../shared/traces/philly-pollux/philly.csv}
while [[ $# -gt 0 ]]; do
    case "$1" in
        --seed) seed=$2; shift 2 ;;
        --jobs) jobs=$2; shift 2 ;;
        --rate) rate=$2; shift 2 ;;
        --ckpt-share) ckpt_share=$2; shift 2 ;;
        --ckpt-interval) ckpt_interval=$2; shift 2 ;;
        --restart-overhead-s) restart_overhead=$2; shift 2 ;;
        --tick-s) tick=$2; shift 2 ;;
        --min-run-s) min_run=$2; shift 2 ;;
        --orders) orders=$2; shift 2 ;;
        --dir) dir=$2; shift 2 ;;
        --gantry) gantry=$2; shift 2 ;;
        --no-slurm) with_slurm=0; shift ;;
        --slurm-runs) slurm_runs=$2; shift 2 ;;
        --table-only) with_slurm=0; orders=""; table_only=1; shift ;;
        --epilog-ack) epilog_ack=1; shift ;;
        --submit-doorbell) submit_doorbell=1; shift ;;
        --gantry-sched) gantry_sched=$2; shift 2 ;;
        --cred-expire) cred_expire=$2; shift 2 ;;
        *) usage ;;
    esac
done
[[ $gantry_sched == backfill || $gantry_sched == builtin ]] || usage
[[ $slurm_runs =~ ^[1-9][0-9]*$ ]] || usage
dir=${dir:-/tmp/gantry-slurm-bench-$seed}
# The run quantum: by default a preemptible job is not preempted before it saved its first
# checkpoint: C s of work plus 5 s, for its script starts up to 1.7 s after gantry's decision
# on the lab (a quantum of exactly C preempts it just before it saves).
min_run=${min_run:-$(( ckpt_interval + 5 ))}
[[ -x $gantry ]] || { echo "slurm-bench: no gantry binary at $gantry (cargo build --release)" >&2; exit 1; }
[[ -f $philly ]] || { echo "slurm-bench: no Philly trace at $philly (set PHILLY)" >&2; exit 1; }
mkdir -p "$dir"
dir=$(cd "$dir" && pwd -P)
helper="$repo/scripts/slurm-bench.py"
lab="$dir/lab"
plan="$dir/plan.json"
python3 "$helper" gen "$seed" "$jobs" "$philly" --rate "$rate" --ckpt-share "$ckpt_share" \
    --ckpt-interval "$ckpt_interval" > "$plan"
python3 "$helper" trace "$plan" > "$dir/mix.csv"
python3 "$helper" terms "$plan" > "$dir/terms.csv"
touch "$dir/metrics.jsonl"

# The job: job.sh RUN_S CKPT_S works (sleeps) RUN_S s; with CKPT_S > 0 it saves its progress
# every CKPT_S s to a file and resumes from it after a requeue. It logs each run's start
# (restart count, progress it resumed from), its end, or its kill (SIGTERM on a requeue, with
# the progress this run saved).
cat > "$dir/job.sh" <<EOF
#!/bin/bash
log=$dir/runs.log
state=$dir/ckpt/\$SLURM_JOB_ID
total=\$1
every=\$2
done_s=0
if (( every > 0 )) && [[ -f \$state ]]; then done_s=\$(cat \$state); fi
saved=0
trap 'echo "kill \$SLURM_JOB_ID \$saved \$(date +%s.%N)" >> \$log; exit 143' TERM
echo "start \$SLURM_JOB_ID \${SLURM_RESTART_COUNT:-0} \$done_s \$(date +%s.%N)" >> \$log
while (( done_s < total )); do
    step=\$(( total - done_s ))
    (( every > 0 && step > every )) && step=\$every
    sleep \$step & wait \$!
    done_s=\$(( done_s + step ))
    if (( every > 0 )); then
        echo \$done_s > \$state.tmp && mv \$state.tmp \$state
        saved=\$(( saved + step ))
    fi
done
echo "end \$SLURM_JOB_ID \$(date +%s.%N)" >> \$log
EOF
chmod +x "$dir/job.sh"

lab_down() { bash "$repo/scripts/slurm-lab.sh" down "$lab" >/dev/null 2>&1 || true; }
trap lab_down EXIT

wait_idle() {
    local t0=$SECONDS
    while [[ -n $(squeue -h -t PD,R,CG,S,CF -o %i 2>/dev/null) ]]; do
        sleep 1
        (( SECONDS - t0 < 3600 )) || { echo "slurm-bench: not idle after 1 h" >&2; return 1; }
    done
}

# `gantry slurm` flags for the semantics of the mix: only jobs with the checkpoint marker are
# preemptible (the rest run to completion), and a preempted job is requeued at once: the
# bench's jobs save on their own schedule and do not act on a grace signal, so a grace period
# would only hold their GPUs longer (the simulator's checkpoint semantics, too).
slurm_flags=(--checkpoint-marker gantry:checkpoint)
if "$gantry" slurm --help 2>/dev/null | grep -q -- '--preempt-grace-s'; then
    slurm_flags+=(--preempt-grace-s 0)
fi

# run NAME SCHED [ORDER]
run() {
    local name=$1 sched=$2 order=${3:-}
    lab_down
    rm -rf "$lab" "$dir/ckpt"
    mkdir -p "$dir/ckpt"
    local ack_lab=() ack_gantry=()
    if [[ -n $order ]] && (( epilog_ack || submit_doorbell )); then
        rm -rf "$dir/ack"
        ack_gantry=(--epilog-ack-dir "$dir/ack")
        if (( epilog_ack )); then ack_lab+=(--epilog-ack "$dir/ack"); fi
        if (( submit_doorbell )); then ack_lab+=(--submit-doorbell "$dir/ack"); fi
    fi
    bash "$repo/scripts/slurm-lab.sh" up "$lab" --nodes 4 --gpus 8 --racks 2 --sched "$sched" \
        --cred-expire "$cred_expire" "${ack_lab[@]}" >/dev/null
    export SLURM_CONF="$lab/etc/slurm.conf"
    : > "$dir/runs.log"
    python3 - "$dir/metrics.jsonl" "$name" <<'PY'
import json, sys
path, name = sys.argv[1], sys.argv[2]
lines = [l for l in open(path) if l.strip() and json.loads(l)["run"] != name]
open(path, "w").writelines(lines)
PY
    # Under sched/backfill both labs submit from 1.5 s after a backfill pass (half-way
    # between two), so a job meets the same passes in both (slurm-bench.py pass).
    local start_at=()
    if [[ $sched == backfill ]]; then
        start_at=(--start-at "$(python3 "$helper" pass "$lab/log/slurmctld.log" gpu |
            awk '{ printf "%.3f", $1 + 1.5 }')")
    fi
    if [[ -z $order ]]; then
        python3 "$helper" submit "$plan" "$dir/job.sh" "$dir/$name.ids" "${start_at[@]}"
        wait_idle
    else
        python3 "$helper" submit "$plan" "$dir/job.sh" "$dir/$name.ids" --hold "${start_at[@]}" &
        local submitter=$!
        until [[ -n $(squeue -h -o %i) ]]; do sleep 0.1; done
        rm -f "$dir/$name.journal" "$dir/$name.journal.tally.json"
        "$gantry" slurm --order "$order" --placement best-fit --poll-ms 200 --tick-s "$tick" --min-run-s "$min_run" \
            "${slurm_flags[@]}" "${ack_gantry[@]}" --exit-when-idle --record "$dir/$name.journal" --json \
            > "$dir/$name.summary.json" 2> "$dir/$name.log"
        wait "$submitter"
        wait_idle
    fi
    squeue --json > "$dir/$name.squeue.json"
    cp "$dir/runs.log" "$dir/$name.runs"
    python3 "$helper" metrics "$dir/$name.squeue.json" "$dir/$name.ids" "$plan" "$dir/$name.runs" 32 |
        python3 -c "import json,sys; m=json.load(sys.stdin); m['run']='$name'; print(json.dumps(m))" \
        >> "$dir/metrics.jsonl"
    if [[ -n $order ]]; then
        python3 "$helper" latency "$gantry" "$dir/$name.journal" "$dir/$name.runs" \
            > "$dir/$name.latency.json" || true
    fi
    echo "slurm-bench: $name done: $(tail -1 "$dir/metrics.jsonl")" >&2
}

# `gantry slurm` gives the queue head a reservation by default; the simulator is told the
# same (a build without the flag has no reservation either way).
sim_flags=()
if "$gantry" simulate --help 2>/dev/null | grep -q -- '--reserve-head'; then
    sim_flags+=(--reserve-head)
fi
# A job requeued onto the nodes it ran on waits until its requeue is 2 s old (gantry's
# REVOKED_CREDENTIAL_MARGIN_MS); builds without the flag do not model it.
if "$gantry" simulate --help 2>/dev/null | grep -q -- '--requeue-delay-s'; then
    sim_flags+=(--requeue-delay-s 2)
fi

# What the simulator predicts for ORDER under the lab's semantics.
simulate() {
    "$gantry" simulate --trace "$dir/mix.csv" --format elasticflow --cluster 2x2x8 \
        --order "$1" --placement best-fit --speed-model ideal --tick-s "$tick" --min-run-s "$min_run" \
        --preemption checkpoint --checkpoint-interval-s "$ckpt_interval" \
        --restart-overhead-s "$restart_overhead" --job-terms "$dir/terms.csv" "${sim_flags[@]}" --quiet --json
}

if [[ $with_slurm == 1 ]]; then
    run slurm backfill
    for (( k = 2; k <= slurm_runs; k++ )); do
        run "slurm-$k" backfill
    done
fi
for order in $orders; do
    run "$order" "$gantry_sched" "$order"
done
if [[ $table_only == 1 ]]; then
    # Recompute every row's metrics from the run's saved files.
    while read -r line; do
        name=$(python3 -c "import json,sys; print(json.loads(sys.argv[1])['run'])" "$line")
        python3 "$helper" metrics "$dir/$name.squeue.json" "$dir/$name.ids" "$plan" "$dir/$name.runs" 32 |
            python3 -c "import json,sys; m=json.load(sys.stdin); m['run']='$name'; print(json.dumps(m))"
    done < "$dir/metrics.jsonl" > "$dir/metrics.jsonl.new"
    mv "$dir/metrics.jsonl.new" "$dir/metrics.jsonl"
fi

{
    echo "seed $seed, $jobs jobs, rate $rate/s, checkpointing share $ckpt_share every ${ckpt_interval} s ($(date -u +%F))"
    echo
    echo "| run | makespan s | avg JCT s | p95 JCT s | deadline misses | util | restarts | GPU s killed | simulated makespan / avg JCT s / misses |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    while read -r line; do
        name=$(python3 -c "import json,sys; print(json.loads(sys.argv[1])['run'])" "$line")
        sim="–"
        if [[ $name != slurm && $name != slurm-* ]]; then
            # Kept beside the runs for the acceptance lines (slurm-bench.py accept).
            rm -f "$dir/$name.sim.json"
            sim=$(simulate "$name" | python3 -c "
import json,sys
m=json.load(sys.stdin)
m=m[0] if isinstance(m,list) else m
m=m.get('metrics',m)
misses=round((m['deadline_miss_rate'] or 0)*m['deadline_jobs'])
json.dump({'makespan_s': m['makespan_s'], 'avg_jct_s': m['avg_jct_s'], 'misses': misses}, open(sys.argv[1], 'w'))
print(f\"{m['makespan_s']:.0f} / {m['avg_jct_s']:.1f} / {misses}\")" "$dir/$name.sim.json" 2>/dev/null || echo "n/a")
        fi
        python3 -c "
import json,sys
m=json.loads(sys.argv[1])
print(f\"| {m['run']} | {m['makespan_s']} | {m['avg_jct_s']} | {m['p95_jct_s']} | {m['deadline_misses']}/{m['deadline_jobs']} | {m['utilisation']} | {m['restarts']} | {m['wasted_gpu_s']} | {sys.argv[2]} |\")" "$line" "$sim"
    done < "$dir/metrics.jsonl"
    echo
    python3 "$helper" accept "$dir"
} | tee "$dir/table.md"
