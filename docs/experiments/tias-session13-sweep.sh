#!/usr/bin/env bash
# Session 13's sweep (docs/tias.md, "Session 13"): the unified index U with a better-fed
# learner, on the development grid, one row per variant; then the full table of the candidate.
# EXPERIMENT ONLY: needs both knob patches applied and built:
#   git apply docs/experiments/tias-session12-knobs.patch docs/experiments/tias-session13-knobs.patch
#   cargo build --release -p gantry
# The knobs read only environment variables, and only in TIAS, so the EDF and LAS rows are
# taken once from the same binary. About 25 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/../.."
base=$(mktemp -d)
OUT=$base ORDERS=edf,las,tias scripts/tias-grid.sh > /dev/null || true
run() { # label, then NAME=value … for the knobs
    local label=$1 out pass fails
    shift
    out=$(env GANTRY_BIG=250 "$@" OUT="$(mktemp -d)" ORDERS=tias BASELINE="$base" scripts/tias-grid.sh || true)
    pass=$(grep -c '| yes |' <<< "$out" || true)
    fails=$(awk -F'|' '/\| NO \|/ {gsub(/ /, "", $2); printf "%s %s / %s; ", $2, $5, $8}' <<< "$out")
    itp=$(awk -F'|' '/\| itp-01-2x8x8 \|/ {printf "%s / %s", $5, $8}' <<< "$out")
    echo "| $label | $pass / 14 | $itp | $fails |"
}
echo "| variant | passing | itp-01-128: miss (feasible) / non-dl JCT ÷ LAS's | failing rows |"
echo "|---|---|---|---|"
# Session 12's staggered U (a table at most every 64 s, reached by job id one 64th per second).
run "session 12's U (staggered), w = 8" GANTRY_EXP=12130 GANTRY_W=8
# + every finished job teaches the size table, deadline jobs too (bit 16384).
for w in 6 8 16; do
    run "+ every finished job in the table, w = $w" GANTRY_EXP=28514 GANTRY_W=$w
done
# + each live deadline job counts as a provisional sample of r·k·W (bit 131072), replaced by
# its true GPU time when it finishes; r = ΣS / ΣW over the finished deadline jobs.
for w in 4 8 16 32; do
    run "+ deadline windows as provisional samples, w = $w" GANTRY_EXP=159586 GANTRY_W=$w
done
run "the same, w = 8, r used once 32 deadline jobs finished (not 8)" GANTRY_EXP=159586 GANTRY_W=8 GANTRY_PRED_MIN=32
run "the same, w = 8, 4 bins per doubling (not 2)" GANTRY_EXP=159586 GANTRY_W=8 GANTRY_QB=4
run "the same, w = 8, every table at once (not staggered)" GANTRY_EXP=151394 GANTRY_W=8
run "windows without the deadline jobs' finishes, w = 8" GANTRY_EXP=143202 GANTRY_W=8
run "every finish + Kaplan-Meier (live jobs censored), w = 8" GANTRY_EXP=94050 GANTRY_W=8
# The same learner as the core's `order::SizeSketch` and `order::GittinsTable` (integer, counts
# only, keys compared as log2 in 1/256ths, r applied when a table is computed), session 12's
# staggered U.
for w in 4 8 16 32; do
    run "core learner and integer table (bit 262144), w = $w" GANTRY_EXP=274274 GANTRY_W=$w
done
# What a landing needs: keys that change only at bin crossings.
run "core learner, w = 8, critical bound rounded up to its bin's edge" GANTRY_EXP=798562 GANTRY_W=8
echo
echo "The candidate, w = 8 (GANTRY_EXP=274274 GANTRY_W=8 GANTRY_BIG=250):"
GANTRY_EXP=274274 GANTRY_W=8 GANTRY_BIG=250 OUT="$(mktemp -d)" ORDERS=tias BASELINE="$base" \
    scripts/tias-grid.sh || true
