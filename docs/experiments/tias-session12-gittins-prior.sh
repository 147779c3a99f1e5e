#!/usr/bin/env bash
# Session 12 (docs/tias.md): TIAS with critical jobs above every job, gangs of >= 1/4 of the
# GPUs best-effort, and non-deadline jobs ordered by a Gittins index computed from each
# configuration's own non-deadline lengths (prior knowledge; EXPERIMENT ONLY). Needs
# docs/experiments/tias-session12-knobs.patch applied and built, jq and python3.
set -euo pipefail
cd "$(dirname "$0")/../.."
G=target/release/gantry
work=$(mktemp -d)
echo "| configuration | TIAS miss | EDF miss | TIAS non-dl JCT ÷ LAS's | pass |"
echo "|---|---|---|---|---|"
while IFS='|' read -r name flags; do
    # The ideal run that gives each job's length: the same workload on 2,048 GPUs.
    workload=${flags% --cluster *}
    lengths=$work/${name%-*}-lengths.csv
    # shellcheck disable=SC2086
    [[ -f $lengths ]] || $G simulate $workload --cluster 32x8x8 --order fifo \
        --speed-model ideal --quiet --jobs-csv "$lengths" > /dev/null
    # shellcheck disable=SC2086
    GANTRY_GIT=$(docs/experiments/gittins-table.py "$lengths") GANTRY_EXP=${GANTRY_EXP:-34} \
        GANTRY_BIG=${GANTRY_BIG:-250} \
        $G compare $flags --orders edf,las,tias --placements best-fit --json |
        jq -r --arg n "$name" '
            def o($x): map(select(.order == $x)) | first;
            o("edf") as $e | o("las") as $l | o("tias") as $t
            | ($t.avg_jct_nondeadline_s / $l.avg_jct_nondeadline_s) as $r
            | "| \($n) | \($t.deadline_miss_rate * 1000 | round / 1000) | \($e.deadline_miss_rate * 1000 | round / 1000) | \($r * 1000 | round / 1000) | \(if $t.deadline_miss_rate <= $e.deadline_miss_rate + 0.005 and $r <= 1.005 then "yes" else "NO" end) |"'
done < <(scripts/tias-grid.sh --list)
