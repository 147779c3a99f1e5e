#!/usr/bin/env bash
# TIAS's deadline-safe mode (`--order tias-deadline-safe`, `DeadlineSafety::LatestStart`)
# against EDF on the TIAS grids (docs/tias.md#deadline-safe-mode): one `gantry compare` per
# configuration of scripts/tias-grid.sh's development grid and of its held-out check, then
# one table. A configuration passes when the mode misses at most EDF's + 0.005 and its
# non-deadline average JCT is at most EDF's: it never loses to EDF on either.
#
#   scripts/tias-safe-grid.sh            # both grids (about 10 s on 2 cores)
#   OUT=dir scripts/tias-safe-grid.sh    # keep each configuration's JSON in dir
#   PREEMPTION="--preemption restart --restart-overhead-s 30" scripts/tias-safe-grid.sh
#                                        # under a preemption semantics (as tias-grid.sh)
#   TIAS_CONFIG=file.toml scripts/tias-safe-grid.sh   # both TIAS orders with some constants
#                                        # changed (--tias-config, as tias-grid.sh)
#
# Needs target/release/gantry (cargo build --release -p gantry), jq and ../shared/traces.
set -euo pipefail
cd "$(dirname "$0")/.."
GANTRY=${GANTRY:-target/release/gantry}
OUT=${OUT:-$(mktemp -d)}
# Extra `gantry compare` flags for every configuration (word-split on purpose).
PREEMPTION=${PREEMPTION:-}
# A `--tias-config` file for both TIAS orders (docs/tias.md, "Tuning").
TIAS_FLAGS=${TIAS_CONFIG:+--tias-config $TIAS_CONFIG}
mkdir -p "$OUT"
[[ -n $PREEMPTION ]] && echo "preemption: $PREEMPTION"
[[ -n ${TIAS_CONFIG:-} ]] && echo "TIAS constants from: $TIAS_CONFIG"

printf '| configuration | EDF miss | TIAS miss | safe miss | EDF JCT non-dl (s) | TIAS JCT non-dl (s) | safe JCT non-dl (s) | safe / EDF JCT | safe / TIAS JCT | pass |\n'
printf '|---|---|---|---|---|---|---|---|---|---|\n'
pass_all=1
run_grid() {
    local grid_flag=$1
    # shellcheck disable=SC2086
    while IFS='|' read -r name flags; do
        nice -n 10 "$GANTRY" compare $flags $PREEMPTION $TIAS_FLAGS --orders edf,tias,tias-deadline-safe \
            --placements best-fit --json > "$OUT/$name.json"
        row=$(jq -r '
            def o($n): (map(select(.order == $n)) | first);
            def r3($x): $x * 1000 | round / 1000;
            o("edf") as $e | o("tias") as $t | o("tias-deadline-safe") as $s
            | ($s.deadline_miss_rate <= $e.deadline_miss_rate + 0.005
               and $s.avg_jct_nondeadline_s <= $e.avg_jct_nondeadline_s) as $ok
            | "\(r3($e.deadline_miss_rate)) | \(r3($t.deadline_miss_rate)) | \(r3($s.deadline_miss_rate)) | \($e.avg_jct_nondeadline_s | round) | \($t.avg_jct_nondeadline_s | round) | \($s.avg_jct_nondeadline_s | round) | \(r3($s.avg_jct_nondeadline_s / $e.avg_jct_nondeadline_s)) | \(r3($s.avg_jct_nondeadline_s / $t.avg_jct_nondeadline_s)) | \(if $ok then "yes" else "NO" end)"
        ' "$OUT/$name.json")
        [[ $row == *"| NO" ]] && pass_all=0
        printf '| %s%s | %s |\n' "$name" "${grid_flag:+ (held-out)}" "$row"
    done < <(scripts/tias-grid.sh $grid_flag --list)
}
run_grid ""
run_grid --held-out
echo
echo "JSON per configuration: $OUT"
[[ $pass_all == 1 ]] && echo "all configurations pass" || echo "some configurations fail"
