#!/usr/bin/env bash
# gantry on a real Slurm partition against Slurm's own scheduler, on one seeded job mix.
#
#   scripts/slurm-bench.sh [--seed S] [--jobs N] [--scale X] [--orders "tias fifo …"]
#                          [--dir DIR] [--gantry BIN]
#
# For each run a fresh private lab (scripts/slurm-lab.sh, 4 nodes x 8 GPUs, two racks):
#   slurm   the mix submitted as is to Slurm alone (sched/backfill, priority/multifactor with
#           all weights 0: FIFO priority plus backfill);
#   ORDER   the same mix submitted held and scheduled by `gantry slurm --order ORDER`
#           (sched/builtin), for each order asked; the first is `gantry slurm`'s default.
# Then one table: makespan, average and p95 JCT (end - submit), deadline misses (not
# COMPLETED by --deadline, or cancelled by the deadline rule), GPU utilisation (GPU time of
# completed final runs / (32 x makespan)), Slurm restarts, GPU time of killed runs (from the
# job script's run log), and, per order, what `gantry simulate` predicts for the same mix
# (ElasticFlow CSV written by scripts/slurm-bench.py, cluster 2x2x8).
#
# The mix (scripts/slurm-bench.py): Poisson arrivals 2.5/s, 1/2/4/8 GPUs (40/25/20/15 %),
# run times Pareto(1.1, 2 s) capped at 30 s times SCALE, 30 % with a deadline. Every job is
# `--requeue` (gantry may preempt it; a preempted run restarts from zero). Default: 60 jobs,
# scale 2 (run times 4-60 s), orders "tias fifo". Each run takes a few minutes; nothing of
# it is in CI except the small version in host/tests/slurm_lab.rs.
# Outputs under DIR (default /tmp/gantry-slurm-bench-SEED): plan, ids, squeue JSON, run logs,
# gantry logs and journals, metrics.jsonl, table.md.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

seed=42
jobs=60
scale=2
orders="tias fifo"
dir=""
gantry="$repo/target/release/gantry"
while [[ $# -gt 0 ]]; do
    case "$1" in
        --seed) seed=$2; shift 2 ;;
        --jobs) jobs=$2; shift 2 ;;
        --scale) scale=$2; shift 2 ;;
        --orders) orders=$2; shift 2 ;;
        --dir) dir=$2; shift 2 ;;
        --gantry) gantry=$2; shift 2 ;;
        *) sed -n '4,5p' "$0" | sed 's/^# //' >&2; exit 64 ;;
    esac
done
dir=${dir:-/tmp/gantry-slurm-bench-$seed}
[[ -x $gantry ]] || { echo "slurm-bench: no gantry binary at $gantry (cargo build --release)" >&2; exit 1; }
mkdir -p "$dir"
dir=$(cd "$dir" && pwd -P)
helper="$repo/scripts/slurm-bench.py"
lab="$dir/lab"
plan="$dir/plan.json"
python3 "$helper" gen "$seed" "$jobs" "$scale" > "$plan"
python3 "$helper" trace "$plan" > "$dir/mix.csv"
: > "$dir/metrics.jsonl"

# The job: sleeps $1 s and logs each run's start, end or kill (SIGTERM on a requeue).
cat > "$dir/job.sh" <<EOF
#!/bin/bash
log=$dir/runs.log
trap 'echo "kill \$SLURM_JOB_ID \$(date +%s.%N)" >> \$log; exit 143' TERM
echo "start \$SLURM_JOB_ID \${SLURM_RESTART_COUNT:-0} \$(date +%s.%N)" >> \$log
sleep "\$1" & wait \$!
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

# run NAME SCHED [ORDER]
run() {
    local name=$1 sched=$2 order=${3:-}
    lab_down
    rm -rf "$lab"
    bash "$repo/scripts/slurm-lab.sh" up "$lab" --nodes 4 --gpus 8 --racks 2 --sched "$sched" >/dev/null
    export SLURM_CONF="$lab/etc/slurm.conf"
    : > "$dir/runs.log"
    if [[ -z $order ]]; then
        python3 "$helper" submit "$plan" "$dir/job.sh" "$dir/$name.ids"
        wait_idle
    else
        python3 "$helper" submit "$plan" "$dir/job.sh" "$dir/$name.ids" --hold &
        local submitter=$!
        until [[ -n $(squeue -h -o %i) ]]; do sleep 0.1; done
        rm -f "$dir/$name.journal" "$dir/$name.journal.tally.json"
        "$gantry" slurm --order "$order" --placement best-fit --poll-ms 200 --exit-when-idle \
            --record "$dir/$name.journal" --json > "$dir/$name.summary.json" 2> "$dir/$name.log"
        wait "$submitter"
        wait_idle
    fi
    squeue --json > "$dir/$name.squeue.json"
    cp "$dir/runs.log" "$dir/$name.runs"
    python3 "$helper" metrics "$dir/$name.squeue.json" "$dir/$name.ids" "$plan" "$dir/$name.runs" 32 |
        python3 -c "import json,sys; m=json.load(sys.stdin); m['run']='$name'; print(json.dumps(m))" \
        >> "$dir/metrics.jsonl"
    echo "slurm-bench: $name done: $(tail -1 "$dir/metrics.jsonl")" >&2
}

simulate() {
    local order=$1
    local extra=()
    # Slurm's preemption is a requeue: a preempted run restarts from zero.
    if "$gantry" simulate --help 2>/dev/null | grep -q -- '--preemption'; then
        extra=(--preemption restart)
    fi
    "$gantry" simulate --trace "$dir/mix.csv" --format elasticflow --cluster 2x2x8 \
        --order "$order" --placement best-fit "${extra[@]}" --json 2>/dev/null
}

run slurm backfill
for order in $orders; do
    run "$order" builtin "$order"
done

{
    echo "seed $seed, $jobs jobs, scale $scale ($(date -u +%F))"
    echo
    echo "| run | makespan s | avg JCT s | p95 JCT s | deadline misses | util | restarts | GPU s killed | simulated makespan / avg JCT s |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    while read -r line; do
        name=$(python3 -c "import json,sys; print(json.loads(sys.argv[1])['run'])" "$line")
        sim="–"
        if [[ $name != slurm ]]; then
            sim=$(simulate "$name" | python3 -c "
import json,sys
m=json.load(sys.stdin)
m=m.get('metrics',m)
print(f\"{m['makespan_s']:.0f} / {m['avg_jct_s']:.1f}\")" 2>/dev/null || echo "n/a")
        fi
        python3 -c "
import json,sys
m=json.loads(sys.argv[1])
print(f\"| {m['run']} | {m['makespan_s']} | {m['avg_jct_s']} | {m['p95_jct_s']} | {m['deadline_misses']}/{m['deadline_jobs']} | {m['utilisation']} | {m['restarts']} | {m['wasted_gpu_s']} | {sys.argv[2]} |\")" "$line" "$sim"
    done < "$dir/metrics.jsonl"
} | tee "$dir/table.md"
