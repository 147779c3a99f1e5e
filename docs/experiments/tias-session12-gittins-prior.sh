#!/usr/bin/env bash
# Session 12 (docs/tias.md): TIAS with critical jobs above every job, gangs of >= 1/4 of the
# GPUs best-effort, and non-deadline jobs ordered by a Gittins index computed from each
# configuration's own non-deadline lengths (prior knowledge; EXPERIMENT ONLY). Needs
# docs/experiments/tias-session12-knobs.patch applied and built, jq and python3. Prints
# scripts/tias-grid.sh's table, one configuration at a time (each has its own table).
set -euo pipefail
cd "$(dirname "$0")/../.."
G=target/release/gantry
work=$(mktemp -d)
header=1
while IFS='|' read -r name flags; do
    # The ideal run that gives each job's length: the same workload on 2,048 GPUs.
    workload=${flags% --cluster *}
    lengths=$work/${name%-*}-lengths.csv
    # shellcheck disable=SC2086
    [[ -f $lengths ]] || $G simulate $workload --cluster 32x8x8 --order fifo \
        --speed-model ideal --quiet --jobs-csv "$lengths" > /dev/null
    rows=$(GANTRY_GIT=$(docs/experiments/gittins-table.py "$lengths") \
        GANTRY_EXP=${GANTRY_EXP:-34} GANTRY_BIG=${GANTRY_BIG:-250} \
        ONLY=$name ORDERS=edf,las,tias OUT=$work/out scripts/tias-grid.sh || true)
    if [[ $header == 1 ]]; then
        head -2 <<< "$rows"
        header=0
    fi
    grep "^| $name |" <<< "$rows"
done < <(scripts/tias-grid.sh --list)
