#!/usr/bin/env bash
# The TIAS development grid (docs/tias.md): one `gantry compare` per configuration, then one
# table with the acceptance check per configuration:
#   TIAS miss rate <= EDF's + 0.005  and  TIAS non-deadline avg JCT <= LAS's x 1.005.
#
#   scripts/tias-grid.sh                 # the development grid (tune only on this)
#   scripts/tias-grid.sh --held-out      # the held-out check (run once, at the end)
#   ORDERS=edf,las,tiresias-dlas-gpu,tias scripts/tias-grid.sh   # fewer orders (these four are needed)
#   OUT=dir scripts/tias-grid.sh         # keep each configuration's JSON in dir
#   scripts/tias-grid.sh [--held-out] --list   # print the grid, one `name|flags` per line
#   ONLY=name scripts/tias-grid.sh       # one configuration of the grid
#   ORDERS=tias BASELINE=dir scripts/tias-grid.sh   # take EDF/LAS rows from an earlier OUT
#   TIAS=tias-deadline-safe scripts/tias-grid.sh     # the same targets for TIAS's deadline-safe mode
#   PREEMPTION="--preemption checkpoint --checkpoint-interval-s 600 --restart-overhead-s 30" \
#       scripts/tias-grid.sh             # the grid under a preemption semantics (docs/tias.md)
#   TIAS_CONFIG=file.toml ORDERS=tias BASELINE=dir scripts/tias-grid.sh
#                                        # TIAS with some constants changed (--tias-config)
#
# With PREEMPTION set, the table gains what preemption cost TIAS: its restarts and the GPU
# hours of killed runs (lost progress + restart overhead), next to LAS's.
#
# Needs target/release/gantry (cargo build --release -p gantry) and ../shared/traces.
# Runs niced; one configuration at a time (compare runs its orders in parallel).
set -euo pipefail
cd "$(dirname "$0")/.."
GANTRY=${GANTRY:-target/release/gantry}
# The order judged in the TIAS columns.
TIAS=${TIAS:-tias}
ORDERS=${ORDERS:-edf,las,tiresias-dlas-gpu,$TIAS,srtf}
TRACES=${TRACES:-../shared/traces}
OUT=${OUT:-$(mktemp -d)}
# Extra `gantry compare` flags for every configuration (word-split on purpose).
PREEMPTION=${PREEMPTION:-}
# A `--tias-config` file for the TIAS orders (docs/tias.md, "Tuning").
TIAS_FLAGS=${TIAS_CONFIG:+--tias-config $TIAS_CONFIG}
mkdir -p "$OUT"
ITP=$TRACES/microsoft-itp-elasticflow/elasticflow
CHRONUS=$TRACES/chronus-philly-deadline
PHILLY=$TRACES/philly-pollux/philly.csv

# name|flags
dev_grid() {
    for c in 01 04 06 08 10; do
        for shape in 2x4x8 2x8x8; do
            echo "itp-$c-$shape|--trace $ITP/cluster$c.csv --format elasticflow --keep-deadlines 0.5 --cluster $shape"
        done
    done
    for shape in 4x8x8 8x8x8; do
        echo "chronus-mix1-$shape|--trace $CHRONUS/trace_job_Philly_MIX1.csv --format chronus --limit 4000 --cluster $shape"
    done
    for shape in 2x8x8 4x8x8; do
        echo "philly-$shape|--trace $PHILLY --limit 3000 --deadlines 0.3:1.5:3 --cluster $shape"
    done
    # Batch arrivals: every job submitted at t = 0, 20 % / 30 % with deadlines.
    for f in 20 30; do
        echo "hydra-$f-4x8x8|--trace $TRACES/hydra-pai-deadline/${f}_ddl.csv --format hydra --cluster 4x8x8"
    done
    # Where the published Tiresias policy is strongest: short ITP slices at ideal speed.
    for c in 01 04; do
        for shape in 2x4x8 2x8x8; do
            echo "itp400-$c-$shape|--trace $ITP/cluster$c.csv --format elasticflow --limit 400 --keep-deadlines 0.5 --speed-model ideal --cluster $shape"
        done
    done
}

held_out_grid() {
    for c in 02 03 05; do
        for shape in 2x4x8 2x8x8; do
            echo "itp-$c-$shape|--trace $ITP/cluster$c.csv --format elasticflow --keep-deadlines 0.5 --cluster $shape"
        done
    done
    for shape in 4x8x8 8x8x8; do
        echo "chronus-mix2-$shape|--trace $CHRONUS/trace_job_Philly_MIX2.csv --format chronus --limit 4000 --cluster $shape"
    done
    for f in 20 30; do
        echo "hydra-$f-8x8x8|--trace $TRACES/hydra-pai-deadline/${f}_ddl.csv --format hydra --cluster 8x8x8"
    done
    for shape in 2x8x8 4x8x8; do
        echo "philly-d0.5-$shape|--trace $PHILLY --limit 3000 --deadlines 0.5:1.2:2 --cluster $shape"
    done
}

grid=dev_grid
[[ ${1:-} == --held-out ]] && grid=held_out_grid
if [[ ${1:-} == --list || ${2:-} == --list ]]; then
    $grid
    exit 0
fi

[[ -n ${TIAS_CONFIG:-} ]] && echo "TIAS constants from: $TIAS_CONFIG"
if [[ -n $PREEMPTION ]]; then
    echo "preemption: $PREEMPTION"
    printf '| configuration | EDF miss (feasible) | LAS miss (feasible) | Tiresias miss (feasible) | TIAS miss (feasible) | SRTF miss (feasible) | LAS JCT non-dl (s) | Tiresias JCT non-dl (s) | TIAS JCT non-dl (s) | SRTF JCT non-dl (s) | TIAS / best LAS | pass | LAS / TIAS restarts | LAS / TIAS wasted GPU·h |\n'
    printf '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n'
else
    printf '| configuration | EDF miss (feasible) | LAS miss (feasible) | Tiresias miss (feasible) | TIAS miss (feasible) | SRTF miss (feasible) | LAS JCT non-dl (s) | Tiresias JCT non-dl (s) | TIAS JCT non-dl (s) | SRTF JCT non-dl (s) | TIAS / best LAS | pass |\n'
    printf '|---|---|---|---|---|---|---|---|---|---|---|---|\n'
fi
pass_all=1
while IFS='|' read -r name flags; do
    [[ -n ${ONLY:-} && $name != "$ONLY" ]] && continue
    # shellcheck disable=SC2086
    nice -n 10 "$GANTRY" compare $flags $PREEMPTION $TIAS_FLAGS --orders "$ORDERS" --placements best-fit --json \
        > "$OUT/$name.json"
    if [[ -n ${BASELINE:-} ]]; then
        jq -s --arg tias "$TIAS" '.[0] + (.[1] | map(select(.order != $tias)))' \
            "$OUT/$name.json" "$BASELINE/$name.json" > "$OUT/$name.json.tmp"
        mv "$OUT/$name.json.tmp" "$OUT/$name.json"
    fi
    row=$(jq -r --arg tias "$TIAS" '
        def o($n): (map(select(.order == $n)) | first);
        def miss($m): if $m == null then "–" else "\($m.deadline_miss_rate * 1000 | round / 1000) (\(($m.deadline_miss_rate_feasible // 0) * 1000 | round / 1000))" end;
        def jct($m): if $m == null then "–" else "\($m.avg_jct_nondeadline_s | round)" end;
        o("edf") as $e | o("las") as $l | o("tiresias-dlas-gpu") as $r | o($tias) as $t | o("srtf") as $s
        | ([$l.avg_jct_nondeadline_s, ($r // $l).avg_jct_nondeadline_s] | min) as $best
        | ($t.deadline_miss_rate <= $e.deadline_miss_rate + 0.005
           and $t.avg_jct_nondeadline_s <= $best * 1.005) as $ok
        | "\(miss($e)) | \(miss($l)) | \(miss($r)) | \(miss($t)) | \(miss($s)) | \(jct($l)) | \(jct($r)) | \(jct($t)) | \(jct($s)) | \($t.avg_jct_nondeadline_s / $best * 1000 | round / 1000) | \(if $ok then "yes" else "NO" end)"
    ' "$OUT/$name.json")
    [[ $row == *"| NO" ]] && pass_all=0
    if [[ -n $PREEMPTION ]]; then
        row+=$(jq -r --arg tias "$TIAS" '
            def o($n): (map(select(.order == $n)) | first);
            o("las") as $l | o($tias) as $t
            | " | \($l.restarts) / \($t.restarts) | \($l.wasted_gpu_hours * 10 | round / 10) / \($t.wasted_gpu_hours * 10 | round / 10)"
        ' "$OUT/$name.json")
    fi
    printf '| %s | %s |\n' "$name" "$row"
done < <($grid)
echo
echo "JSON per configuration: $OUT"
[[ $pass_all == 1 ]] && echo "all configurations pass" || echo "some configurations fail"
