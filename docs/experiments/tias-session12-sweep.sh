#!/usr/bin/env bash
# Session 12's sweep (docs/tias.md, "Session 12"): TIAS variants on the development grid, one
# row per variant. EXPERIMENT ONLY: needs docs/experiments/tias-session12-knobs.patch applied
# and built (git apply docs/experiments/tias-session12-knobs.patch &&
# cargo build --release -p gantry). The knobs read only environment variables, and only in
# TIAS, so the EDF and LAS rows are taken once from the same binary.
set -euo pipefail
cd "$(dirname "$0")/../.."
base=$(mktemp -d)
OUT=$base ORDERS=edf,las,tias scripts/tias-grid.sh > /dev/null || true
run() { # label, then NAME=value … for the knobs
    local label=$1 out pass fails
    shift
    out=$(env "$@" OUT="$(mktemp -d)" ORDERS=tias BASELINE="$base" scripts/tias-grid.sh || true)
    pass=$(grep -c '| yes |' <<< "$out" || true)
    fails=$(awk -F'|' '/\| NO \|/ {gsub(/ /, "", $2); printf "%s %s / %s; ", $2, $5, $8}' <<< "$out")
    echo "| $label | $pass / 14 | $fails |"
}
echo "| variant | passing | failing rows: TIAS miss (feasible) / non-dl JCT ÷ LAS's |"
echo "|---|---|---|"
run "main" GANTRY_EXP=0
run "B: critical jobs at the head of queue 1 also while young" GANTRY_EXP=1
run "C: critical jobs above every job" GANTRY_EXP=2
for q in 300 500 600 1200; do
    run "first 2D-LAS queue ends at $q GPU·s" GANTRY_Q0=$q
done
run "C + gangs of ≥ 1/4 of the healthy GPUs best-effort" GANTRY_EXP=2 GANTRY_BIG=250
run "main + gangs of ≥ 1/4 of the healthy GPUs best-effort" GANTRY_EXP=0 GANTRY_BIG=250
run "C + remaining bound k·(ρW − e) > 72,000 GPU·s best-effort" GANTRY_EXP=2 GANTRY_BIG=72000
run "C + remaining bound > 288,000 GPU·s best-effort" GANTRY_EXP=2 GANTRY_BIG=288000
run "C + remaining bound > 288,000 GPU·s best-effort, only in overload mode" GANTRY_EXP=130 GANTRY_BIG=288000
run "ORACLE: C + non-deadline jobs by true GPU·time (SJF)" GANTRY_EXP=10
run "ORACLE: C + non-deadline jobs by true remaining GPU·time (SRPT)" GANTRY_EXP=26
run "ORACLE: C + SRPT + gangs of ≥ 1/4 best-effort" GANTRY_EXP=26 GANTRY_BIG=250
run "C + gangs of ≥ 1/4 best-effort + Gittins index learned online (every 64 finishes)" GANTRY_EXP=98 GANTRY_BIG=250
run "the same, Gittins table re-learned at every non-deadline finish" GANTRY_EXP=354 GANTRY_BIG=250
# U: one index for every job, expected completions per GPU·s: a critical deadline job
# w / (k·(ρW − e)), a non-deadline job the Gittins index of its attained GPU time, learned
# online from the finished non-deadline jobs (re-learned at each such finish, one pseudo-sample
# of a very long job); lifted critical jobs stay on top, gangs of >= 1/4 best-effort.
for w in 8 16 32; do
    run "U, w = $w" GANTRY_EXP=3938 GANTRY_W=$w GANTRY_BIG=250
done
run "U, w = 16, without the gang rule" GANTRY_EXP=3938 GANTRY_W=16
run "U, w = 16, the table re-learned every 64 finishes" GANTRY_EXP=3682 GANTRY_W=16 GANTRY_BIG=250
run "U, w = 16, without the pseudo-sample" GANTRY_EXP=1890 GANTRY_W=16 GANTRY_BIG=250
run "U, w = 16, each job's index frozen when it enters a service bin" GANTRY_EXP=8034 GANTRY_W=16 GANTRY_BIG=250
run "U, w = 16, tables published at most every 64 s and reached staggered (1 + id mod 64 s)" \
    GANTRY_EXP=12130 GANTRY_W=16 GANTRY_BIG=250
for half in 32 64 128; do
    run "the same, the histogram halved every $half non-deadline finishes" \
        GANTRY_EXP=12130 GANTRY_W=16 GANTRY_BIG=250 GANTRY_HALF=$half
done
