#!/usr/bin/env bash
# Throughput of `gantry slurm` against Slurm alone: N one-GPU jobs of 1 s on the private lab.
#
#   scripts/slurm-scale.sh [--jobs N] [--poll-ms MS] [--order O] [--sched S]
#                          [--gantry-sched S] [--dir DIR] [--gantry BIN] [--epilog-ack]
#
# Two runs on a fresh lab each, both with the same slurm.conf unless --gantry-sched says
# otherwise (4 nodes x 8 GPUs, scripts/slurm-lab.sh --sched S, default backfill; under
# DIR/slurm and DIR/gantry): N jobs
# (`sbatch --hold --gpus=1 --time=1 --wrap 'sleep 1'`) are submitted held, then
#   slurm:  Slurm's own scheduler gets them all at once (`scontrol release` of every job);
#   gantry: `gantry slurm --order O --poll-ms MS --exit-when-idle --json` schedules them.
# Each run is timed from the release (gantry's start) to the last job's end (Slurm's
# end_time); jobs/s = N / that. gantry's poll time p50/p99 (its summary: one poll =
# `squeue` + `sinfo`, starting with N jobs pending) is printed beside its period, and for
# both runs where a start's time goes (slurmctld.log: job end -> gantry's release -> Slurm's
# start -> the job's end).
# --epilog-ack: gantry's lab runs scripts/gantry-epilog.sh as its Epilog and gantry gets
# --epilog-ack-dir (Slurm alone's lab has no epilog, its best case).
# Not in CI (about 3 minutes for 1,000 jobs). Needs Slurm (the lab script installs it).
set -euo pipefail

jobs=1000
poll_ms=200
order=tias
sched=backfill
gantry_sched=""
dir=/tmp/gantry-slurm-scale
repo=$(cd "$(dirname "$0")/.." && pwd -P)
gantry=""
epilog_ack=0
while [[ $# -gt 0 ]]; do
    case "$1" in
        --jobs) jobs=$2; shift 2 ;;
        --poll-ms) poll_ms=$2; shift 2 ;;
        --order) order=$2; shift 2 ;;
        --sched) sched=$2; shift 2 ;;
        --gantry-sched) gantry_sched=$2; shift 2 ;;
        --dir) dir=$2; shift 2 ;;
        --gantry) gantry=$2; shift 2 ;;
        --epilog-ack) epilog_ack=1; shift ;;
        *) sed -n '4,5p' "$0" | sed 's/^# //' >&2; exit 64 ;;
    esac
done
[[ $jobs =~ ^[1-9][0-9]*$ && $poll_ms =~ ^[1-9][0-9]*$ ]] || {
    echo "slurm-scale: --jobs and --poll-ms take positive integers" >&2
    exit 64
}
if [[ -z $gantry ]]; then
    (cd "$repo" && cargo build --release -p gantry >&2)
    gantry="$repo/target/release/gantry"
fi

labs=()
cleanup() {
    local lab
    for lab in "${labs[@]}"; do
        "$repo/scripts/slurm-lab.sh" down "$lab" >/dev/null 2>&1 || true
    done
}
trap cleanup EXIT

# Brings up a fresh lab in $1 with scheduler $2 (more slurm-lab.sh flags after) and exports
# its SLURM_CONF.
lab_up() {
    rm -rf "$1"
    labs+=("$1")
    eval "$("$repo/scripts/slurm-lab.sh" up "$1" --nodes 4 --gpus 8 --sched "$2" "${@:3}")"
}

# Submits N held jobs (4 at a time) and prints their ids, comma-separated.
submit() {
    seq "$jobs" | xargs -P4 -I{} sbatch --parsable --hold --gpus=1 --time=1 \
        -o /dev/null --wrap 'sleep 1' | tr -d ' ' | paste -sd, -
}

# Waits until none of the partition's jobs is pending, running or completing.
wait_done() {
    while [[ -n $(squeue -h -t PD,R,CG,CF -o %i | head -1) ]]; do sleep 0.5; done
}

# Prints the last end time (Unix s) among the jobs and how many completed.
ends() {
    SLURM_TIME_FORMAT=%s squeue -h -t all -j "$1" -o '%e %T' |
        awk '{ if ($1 > last) last = $1; if ($2 == "COMPLETED") done++ }
             END { printf "%d %d\n", last, done }'
}

now() { date +%s.%N; }

# Where a start's time goes, from slurmctld's log $1 (millisecond times) of run $2 (slurm or
# gantry): p50 and p90 of the time from a start to that job's end and from the last job end
# before a start to the start; for gantry also from the last end before a release to the
# release and from a release to the job's start.
breakdown() {
    python3 - "$1" "$2" <<'PY'
import bisect, re, sys
from datetime import datetime
def at(line):
    return datetime.strptime(line[1:24], "%Y-%m-%dT%H:%M:%S.%f").timestamp()
release, start, end = {}, {}, {}
for line in open(sys.argv[1]):
    for pattern, into in ((r"release hold on JobId=(\d+)", release),
                          (r"(?:Allocate|Started) JobId=(\d+)", start),
                          (r"_job_complete: JobId=(\d+) done", end)):
        m = re.search(pattern, line)
        if m:
            into[int(m[1])] = at(line)
ends = sorted(end.values())
def since_end(t):
    i = bisect.bisect_left(ends, t)
    return t - ends[i - 1] if i > 0 else None
def q(values):
    v = sorted(x for x in values if x is not None and x < 3)
    return "-" if not v else "%.2f/%.2f" % (v[len(v) // 2], v[int(len(v) * 0.9)])
runs = "start->end %s  end->start %s  (s, p50/p90)" % (
    q(end[j] - t for j, t in start.items() if j in end),
    q(since_end(t) for t in start.values()))
if sys.argv[2] == "gantry":
    runs = "end->release %s  release->start %s  %s" % (
        q(since_end(t) for t in release.values()),
        q(start[j] - t for j, t in release.items() if j in start), runs)
print(runs)
PY
}

# --- Slurm alone
lab_up "$dir/slurm" "$sched"
ids=$(submit)
t0=$(now)
scontrol release "$ids"
wait_done
read -r slurm_end slurm_done < <(ends "$ids")
slurm_s=$(awk -v a="$t0" -v b="$slurm_end" 'BEGIN { printf "%.1f", b - a }')
slurm_times=$(breakdown "$dir/slurm/log/slurmctld.log" slurm)
"$repo/scripts/slurm-lab.sh" down "$dir/slurm" >/dev/null 2>&1

# --- gantry
gantry_sched=${gantry_sched:-$sched}
ack_lab=() ack_gantry=()
if (( epilog_ack )); then
    ack_lab=(--epilog-ack "$dir/gantry-ack") ack_gantry=(--epilog-ack-dir "$dir/gantry-ack")
    rm -rf "$dir/gantry-ack"
fi
lab_up "$dir/gantry" "$gantry_sched" "${ack_lab[@]}"
ids=$(submit)
t0=$(now)
summary=$("$gantry" slurm --order "$order" --poll-ms "$poll_ms" --exit-when-idle --json \
    "${ack_gantry[@]}" --record "$dir/gantry/scale.journal" 2>"$dir/gantry.log")
wait_done
read -r gantry_end gantry_done < <(ends "$ids")
gantry_s=$(awk -v a="$t0" -v b="$gantry_end" 'BEGIN { printf "%.1f", b - a }')
gantry_times=$(breakdown "$dir/gantry/log/slurmctld.log" gantry)
poll=$(python3 -c 'import json,sys; s=json.loads(sys.argv[1]); print("%.1f %.1f %d" % (s["poll_p50_ms"], s["poll_p99_ms"], s["cycles"]))' "$summary")
read -r p50 p99 cycles <<<"$poll"

printf '%-8s %6s %9s %10s %8s\n' run jobs completed seconds jobs/s
printf '%-8s %6d %9d %10s %8.1f\n' slurm "$jobs" "$slurm_done" "$slurm_s" \
    "$(awk -v n="$jobs" -v s="$slurm_s" 'BEGIN { print n / s }')"
printf '%-8s %6d %9d %10s %8.1f\n' gantry "$jobs" "$gantry_done" "$gantry_s" \
    "$(awk -v n="$jobs" -v s="$gantry_s" 'BEGIN { print n / s }')"
echo "slurm: sched/$sched; gantry ($order, sched/$gantry_sched$( (( epilog_ack )) && echo ', epilog ack')): poll p50 $p50 ms, p99 $p99 ms, period $poll_ms ms, $cycles cycles; log $dir/gantry.log"
echo "slurm:  $slurm_times"
echo "gantry: $gantry_times"
