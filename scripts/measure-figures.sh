#!/usr/bin/env bash
# Measures the README's "Current figures" and prints them as that table's rows: one value per
# figure, the command beside it. Paste the output over the table.
#
#   scripts/measure-figures.sh           # the timed commands (about a minute)
#   scripts/measure-figures.sh --bench   # and the criterion benchmark rows (several minutes)
#
# Wall times are medians (or min and median) of runs made one after another; on a shared
# machine compare runs of one invocation only, never figures from different days.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p gantry >&2
gantry=target/release/gantry
philly=../shared/traces/philly-pollux/philly.csv
chronus=../shared/traces/chronus-philly-deadline/trace_job_Philly_MIX1.csv

# wall SECONDS of one run of the command (stdout and stderr dropped)
wall() {
    local start end
    start=$(date +%s.%N)
    "$@" >/dev/null 2>&1
    end=$(date +%s.%N)
    awk -v a="$start" -v b="$end" 'BEGIN { print b - a }'
}
# "min / median" of a list of numbers, in seconds with two decimals
min_median() { sort -g | awk '{ v[NR] = $1 } END { printf "%.2f / %.2f", v[1], v[int((NR + 1) / 2)] }'; }
median() { sort -g | awk '{ v[NR] = $1 } END { printf "%.2f", v[int((NR + 1) / 2)] }'; }
row() { printf '| %s | %s | `%s` |\n' "$1" "$2" "$3"; }

echo '| figure | now | command |'
echo '|---|---|---|'

main_job=$(for _ in 1 2 3; do wall $gantry simulate; done | median)
row "the main job: gantry and 6 baselines on the bundled mixed sample (1,500 jobs, 256 GPUs)" \
    "$main_job s wall (median of 3)" "gantry simulate"

if [[ -f $philly ]]; then
    flags=(--trace "$philly" --cluster 8x8x8 --placement best-fit)
    fifo=$(for _ in 1 2 3; do wall $gantry simulate "${flags[@]}"; done | median)
    row "full Philly trace, 82,247 jobs, 512 GPUs, FIFO" "$fifo s wall (median of 3)" \
        "gantry simulate --trace $philly --cluster 8x8x8 --placement best-fit"
    las_runs=() tias_runs=()
    for _ in 1 2 3 4 5; do # interleaved, so both see the same machine
        las_runs+=("$(wall $gantry simulate "${flags[@]}" --order las)")
        tias_runs+=("$(wall $gantry simulate "${flags[@]}" --order tias)")
    done
    las=$(printf '%s\n' "${las_runs[@]}" | min_median)
    tias=$(printf '%s\n' "${tias_runs[@]}" | min_median)
    ratio=$(awk -v t="${tias##* }" -v l="${las##* }" 'BEGIN { printf "%.2f", t / l }')
    row "the same, 2D-LAS, wall min / median of 5 (interleaved with TIAS)" "$las s" "… --order las"
    row "the same, TIAS, wall min / median of 5; median ÷ LAS's" "$tias s; $ratio ×" "… --order tias"
fi
if [[ -f $chronus ]]; then
    t=$(wall $gantry compare --trace "$chronus" --format chronus --cluster 16x8x8 \
        --orders fifo,edf,las,tias,srtf --placements best-fit)
    row "Chronus MIX1 (30,756 jobs), 5 orders on 1,024 GPUs" "$(printf '%.2f' "$t") s wall" \
        "gantry compare --trace $chronus --format chronus --cluster 16x8x8 --orders fifo,edf,las,tias,srtf --placements best-fit"
fi
if [[ -d ../shared/anchors/tiresias ]]; then
    t=$(wall $gantry tiresias-check --inputs p10k)
    row "Tiresias cross-check, 10k slice, 20 runs" "$(printf '%.2f' "$t") s wall" \
        "gantry tiresias-check --inputs p10k"
fi

if [[ ${1:-} == --bench ]]; then
    # criterion's "thrpt:" line gives [low mean high] elements/s; the mean is the middle one.
    out=$(cargo bench -p gantry --features bench --bench tias_events 2>/dev/null)
    thrpt() { # ORDER WAITING -> mean events/s, as a plain number
        awk -v id="events_1024gpus/$1/$2" '
            $1 == id { found = 1 }
            found && /thrpt:/ {
                v = $4; u = $5
                if (u ~ /^K/) v *= 1e3; else if (u ~ /^M/) v *= 1e6; else if (u ~ /^G/) v *= 1e9
                printf "%.0f\n", v; exit
            }' <<<"$out"
    }
    sizes=(512 4096 8192)
    kilo() { awk -v v="$1" 'BEGIN { printf "%.0fk", v / 1e3 }'; }
    over() { awk -v t="$1" -v l="$2" 'BEGIN { printf "%.2f", t / l }'; }
    tias=() host=() las=() ratio=() host_ratio=()
    for n in "${sizes[@]}"; do
        t=$(thrpt tias "$n") h=$(thrpt tias-host "$n") l=$(thrpt las "$n")
        tias+=("$(kilo "$t")") host+=("$(kilo "$h")") las+=("$(kilo "$l")")
        ratio+=("$(over "$t" "$l")") host_ratio+=("$(over "$h" "$l")")
    done
    join() { # A B C -> "A / B / C"
        local out=$1
        shift
        for x in "$@"; do out+=" / $x"; done
        echo "$out"
    }
    row "core throughput, 1,024 GPUs all busy, 512 / 4,096 / 8,192 jobs waiting: TIAS (\`TiasConfig::default()\`, as on the firmware), TIAS with the preemption margin (\`TiasConfig::host()\`, gantry's \`tias\`) and 2D-LAS events/s" \
        "$(join "${tias[@]}"), $(join "${host[@]}") and $(join "${las[@]}") (TIAS $(join "${ratio[@]}") ×, with the margin $(join "${host_ratio[@]}") ×; run to run ±15 %)" \
        "cargo bench -p gantry --features bench --bench tias_events"
fi
