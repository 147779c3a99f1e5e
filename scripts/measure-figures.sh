#!/usr/bin/env bash
# Re-measures the timed rows of the README's "Measured figures" table and prints them as
# markdown rows (wall and user seconds, and the load average before each run), so a row is
# updated by pasting its line. Benchmarks (criterion) are run separately: see the table.
# Usage: scripts/measure-figures.sh [ROW...]   (rows: philly las tias chronus p2k p10k)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p gantry >&2
gantry=target/release/gantry
philly=../shared/traces/philly-pollux/philly.csv
chronus=../shared/traces/chronus-philly-deadline/trace_job_Philly_MIX1.csv

# row NAME LABEL COMMAND...: one markdown row with the command's wall and user time.
row() {
    local name=$1 label=$2
    shift 2
    local load
    load=$(cut -d' ' -f1 /proc/loadavg)
    local t times
    times=$(mktemp)
    /usr/bin/time -o "$times" -f '%e %U' "$@" >/dev/null 2>&1
    t=$(tail -1 "$times")
    rm -f "$times"
    printf '| %s | %s s wall (%s s user; load %s) | `%s` |\n' \
        "$label" "${t%% *}" "${t##* }" "$load" "${*/#$gantry/gantry}"
}

rows=("$@")
has() { [[ ${#rows[@]} -eq 0 ]] || [[ " ${rows[*]} " == *" $1 "* ]]; }

if [[ -f $philly ]]; then
    has philly && row philly "full Philly trace, 82,247 jobs, FIFO, 512 GPUs" \
        $gantry simulate --trace $philly --cluster 8x8x8 --placement best-fit
    has las && row las "the same, LAS" \
        $gantry simulate --trace $philly --cluster 8x8x8 --placement best-fit --order las
    has tias && row tias "the same, TIAS" \
        $gantry simulate --trace $philly --cluster 8x8x8 --placement best-fit --order tias
fi
if [[ -f $chronus ]]; then
    has chronus && row chronus "Chronus MIX1, 5 orders on 1,024 GPUs" \
        $gantry compare --trace $chronus --format chronus --cluster 16x8x8 \
        --orders fifo,edf,las,tias,srtf --placements best-fit
fi
if [[ -d ../shared/anchors/tiresias ]]; then
    has p2k && row p2k "Tiresias cross-check, 2k slice (10 policies × 2 clusters)" \
        $gantry tiresias-check --inputs p2k
    has p10k && row p10k "Tiresias cross-check, 10k slice (10 policies × 2 clusters)" \
        $gantry tiresias-check --inputs p10k
fi
