#!/bin/sh
# Slurm Epilog for a partition `gantry slurm --epilog-ack-dir DIR` schedules: rings gantry's
# doorbell (creates DIR/JOBID.end, so gantry polls at once instead of at its next period),
# then waits until gantry has seen this job end and released its successors (gantry creates
# DIR/JOBID), at most GANTRY_EPILOG_WAIT_MS, then exits 0. The end of an epilog makes Slurm
# run a scheduling pass at once, which starts the successors gantry released onto this node;
# without the wait they would wait for Slurm's next periodic pass (about once a second).
#
# slurm.conf: Epilog=/path/to/gantry-epilog.sh (or call it from the site's own epilog).
# DIR must be the folder gantry writes, seen from the compute node (a shared file system:
# mount it with lookupcache=positive on NFS, so a file's absence is not cached). If gantry is
# not running, each epilog waits the bound: keep it short.
dir=${GANTRY_EPILOG_ACK_DIR:-/var/lib/gantry/epilog-ack}
wait_ms=${GANTRY_EPILOG_WAIT_MS:-1000}
[ -n "$SLURM_JOB_ID" ] || exit 0
# The doorbell is a hint: if it cannot be written, gantry sees the end at its next poll.
touch "$dir/$SLURM_JOB_ID.end" 2>/dev/null || true
waited=0
while [ ! -e "$dir/$SLURM_JOB_ID" ] && [ "$waited" -lt "$wait_ms" ]; do
    sleep 0.02
    waited=$((waited + 20))
done
exit 0
