#!/usr/bin/env bash
# A private Slurm cluster on loopback, for testing `gantry slurm` against the real thing.
#
#   scripts/slurm-lab.sh up DIR [--nodes N] [--gpus G] [--racks R] [--partition P]
#                               [--auth munge|none] [--timeout S] [--sched builtin|backfill]
#                               [--epilog-ack ACKDIR] [--submit-doorbell ACKDIR]
#                               [--cred-expire S] [--accounting] [--licenses SPEC]
#   scripts/slurm-lab.sh down DIR
#
# `up` writes everything under DIR (config, state, spool, logs, pid files, munge key and
# socket, fake GPU device links), starts one slurmctld and one `slurmd -N nX` per node
# (Debian's Slurm is built with multiple-slurmd support), and waits until every node is idle
# and the controller has run its first scheduling cycle;
# on failure or after the deadline it prints the logs' tails, stops what it started and exits
# 1. Its last line on stdout is `export SLURM_CONF=DIR/etc/slurm.conf`, for `eval`.
# `down` cancels every job, asks slurmctld to shut down, then ends the daemons by the PIDs in
# DIR's pid files (and any job step whose environment names DIR's slurm.conf), never by name.
#
# Defaults: 4 nodes x 8 GPUs, one rack (no topology.conf; R > 1 writes leaf switches s1..sR),
# partition `gpu`, private munged, sched/builtin (what `gantry slurm` drives; `--sched backfill`
# gives Slurm's own scheduler: sched/backfill with priority/multifactor, all weights 0, i.e.
# FIFO priority plus backfill, for measuring Slurm alone; DebugFlags=Backfill logs each of
# its passes), `cred_expire=10` under munge (Slurm's wait before a requeued job may run
# again on its old nodes is cred_expire + 1 s; a stock Slurm's 120 with `--cred-expire 120`).
# `--accounting` adds a private MariaDB (socket only, no TCP) and slurmdbd, with limits
# enforced (`AccountingStorageEnforce=associations,limits,qos`), cluster, account `lab` and
# user root registered, so that QOS and association limits can be set with `sacctmgr`;
# installs mariadb-server and slurmdbd when missing. `--licenses SPEC` (`sim:1,cad:2`) sets
# the cluster's licenses (`Licenses=SPEC`), which jobs ask for with `-L`.
# GPUs are fake: GRES File= points at symlinks to /dev/null
# (Slurm 22.05 drops file-less GPUs and refuses plain files). Ports: a block of N+1 free TCP
# ports derived from DIR's path, so two labs in two folders do not collide. Installs
# slurm-wlm and munge with apt-get when missing (needs root). Facts this relies on:
# ../shared/notes/slurm-lab.md.
set -euo pipefail

# This script's folder, for the epilog and job_submit scripts beside it.
scripts_dir=$(cd "$(dirname "$0")" && pwd -P)

usage() {
    sed -n '4,8p' "$0" | sed 's/^# //' >&2
    exit 64
}

[[ $# -ge 2 ]] || usage
action=$1
dir=$2
shift 2
nodes=4
gpus=8
racks=1
partition=gpu
auth=munge
timeout_s=60
sched=builtin
epilog_ack=""
submit_doorbell=""
cred_expire=10
accounting=0
licenses=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --nodes) nodes=$2; shift 2 ;;
        --gpus) gpus=$2; shift 2 ;;
        --racks) racks=$2; shift 2 ;;
        --partition) partition=$2; shift 2 ;;
        --auth) auth=$2; shift 2 ;;
        --timeout) timeout_s=$2; shift 2 ;;
        --sched) sched=$2; shift 2 ;;
        --epilog-ack) epilog_ack=$2; shift 2 ;;
        --submit-doorbell) submit_doorbell=$2; shift 2 ;;
        --cred-expire) cred_expire=$2; shift 2 ;;
        --accounting) accounting=1; shift ;;
        --licenses) licenses=$2; shift 2 ;;
        *) usage ;;
    esac
done
for n in "$nodes" "$gpus" "$racks" "$timeout_s" "$cred_expire"; do
    [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "slurm-lab: '$n' is not a positive integer" >&2; exit 64; }
done
(( racks <= nodes )) || { echo "slurm-lab: --racks $racks > --nodes $nodes" >&2; exit 64; }
[[ $auth == munge || $auth == none ]] || usage
[[ $sched == builtin || $sched == backfill ]] || usage

mkdir -p "$dir"
dir=$(cd "$dir" && pwd -P)
conf="$dir/etc/slurm.conf"
export SLURM_CONF="$conf"

log() { echo "slurm-lab: $*" >&2; }

# PIDs from DIR's pid files that are still alive (`live_pids munge` for munged's).
live_pids() {
    local f pid files=("$dir"/run/*.pid)
    [[ ${1:-} == munge ]] && files=("$dir"/munge/munged.pid)
    for f in "${files[@]}"; do
        [[ -f $f ]] || continue
        pid=$(tr -dc '0-9' < "$f")
        [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null && echo "$pid"
    done
    return 0
}

# Job steps and job processes this lab's slurmd started: their environment names our
# slurm.conf (slurmd passes its own, sbatch the submitter's) and a job id or slurmstepd.
job_pids() {
    local f p
    while IFS= read -r f; do
        p=${f#/proc/}
        p=${p%/environ}
        [[ $p == "$$" || $p == "$BASHPID" ]] && continue
        if [[ $(cat 2>/dev/null < "/proc/$p/comm") == slurmstepd ]] ||
            grep -qz '^SLURM_JOB_ID=' 2>/dev/null < "$f"; then
            echo "$p"
        fi
    done < <(grep -lzxF "SLURM_CONF=$conf" /proc/[0-9]*/environ 2>/dev/null)
    return 0
}

# Waits until none of the given PIDs is alive, up to $1 seconds; returns 1 if some still are.
wait_gone() {
    local deadline=$((SECONDS + $1)) pid alive
    shift
    while :; do
        alive=0
        for pid in "$@"; do kill -0 "$pid" 2>/dev/null && alive=1; done
        (( alive == 0 )) && return 0
        (( SECONDS >= deadline )) && return 1
        sleep 0.2
    done
}

# Ends the given PIDs: waits up to $1 s for them to exit by themselves, then TERM, then KILL.
end_pids() {
    local grace=$1 pids
    shift
    (( $# > 0 )) || return 0
    wait_gone "$grace" "$@" && return 0
    mapfile -t pids < <(for p in "$@"; do kill -0 "$p" 2>/dev/null && echo "$p"; done)
    log "sending TERM to ${pids[*]}"
    kill -TERM "${pids[@]}" 2>/dev/null || true
    wait_gone 5 "${pids[@]}" && return 0
    log "sending KILL to ${pids[*]}"
    kill -KILL "${pids[@]}" 2>/dev/null || true
    wait_gone 5 "${pids[@]}" || { log "could not end ${pids[*]}"; return 1; }
}

down() {
    local pids munge_pids rc=0 deadline
    # Collected before anything stops: a daemon removes its pid file while it shuts down.
    mapfile -t pids < <(live_pids; job_pids)
    mapfile -t munge_pids < <(live_pids munge)
    if [[ -f $conf ]] && (( ${#pids[@]} > 0 )); then
        timeout 10 scancel --quiet --partition="$(sed -n 's/^PartitionName=\([^ ]*\).*/\1/p' "$conf")" 2>/dev/null || true
        # Let slurmd end the job steps before the controller goes away.
        deadline=$((SECONDS + 6))
        while (( SECONDS < deadline )) && [[ -n $(timeout 5 squeue -h -t R,CG,CF -o %i 2>/dev/null) ]]; do
            sleep 0.2
        done
        timeout 10 scontrol shutdown 2>/dev/null || true
    fi
    end_pids 8 "${pids[@]}" || rc=1
    mapfile -t pids < <(job_pids)
    end_pids 0 "${pids[@]}" || rc=1
    # munged last: slurmctld and slurmd talk to it until they exit.
    (( ${#munge_pids[@]} > 0 )) && kill -TERM "${munge_pids[@]}" 2>/dev/null
    end_pids 5 "${munge_pids[@]}" || rc=1
    (( rc == 0 )) || return 1
    rm -f "$dir"/run/*.pid "$dir"/munge/munged.pid
    log "down: nothing of $dir is running"
}

install_missing() {
    local missing=()
    command -v slurmctld >/dev/null 2>&1 || missing+=(slurm-wlm)
    if (( accounting )); then
        command -v slurmdbd >/dev/null 2>&1 || missing+=(slurmdbd)
        command -v mariadbd >/dev/null 2>&1 || missing+=(mariadb-server)
    fi
    [[ $auth == munge ]] && ! command -v munged >/dev/null 2>&1 && missing+=(munge)
    (( ${#missing[@]} == 0 )) && return 0
    log "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

# A block of nodes+1 consecutive free TCP ports (nodes+2 with slurmdbd's), starting from a
# base derived from DIR.
pick_ports() {
    local need=$((nodes + 1 + accounting)) sum base p busy tries
    sum=$(printf '%s' "$dir" | cksum | cut -d' ' -f1)
    base=$((20000 + (sum % 400) * 100))
    for tries in $(seq 1 50); do
        busy=0
        for ((p = base; p < base + need; p++)); do
            if ss -Htan "( sport = :$p )" | grep -q .; then busy=1; break; fi
        done
        if (( busy == 0 )); then echo "$base"; return 0; fi
        base=$(( base + 100 > 59900 ? 20000 : base + 100 ))
    done
    log "no block of $need free ports found"
    return 1
}

write_config() {
    local base=$1 ctld_port=$1 first=$(($1 + 1)) last=$(($1 + nodes)) i
    mkdir -p "$dir"/{etc,state,spool,log,run,dev,munge}
    for ((i = 0; i < gpus; i++)); do ln -sfn /dev/null "$dir/dev/nvidia$i"; done
    local auth_lines
    if [[ $auth == munge ]]; then
        auth_lines="AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.sock,cred_expire=$cred_expire"
    else
        auth_lines="AuthType=auth/none
CredType=cred/none"
    fi
    local accounting_lines="AccountingStorageType=accounting_storage/none"
    if (( accounting )); then
        accounting_lines="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=$((last + 1))
AccountingStorageEnforce=associations,limits,qos
AccountingStorageTRES=gres/gpu"
        # Under munge, the socket the tools sign their requests to slurmdbd with.
        if [[ $auth == munge ]]; then
            accounting_lines="$accounting_lines
AccountingStoragePass=$dir/munge/munge.sock"
        fi
        # slurmdbd reads slurmdbd.conf beside slurm.conf; it must be private to SlurmUser.
        {
            echo "# Written by scripts/slurm-lab.sh: the lab's accounting daemon, on its private MariaDB."
            grep -v '^CredType=' <<< "$auth_lines"
            echo "DbdHost=localhost"
            echo "DbdAddr=127.0.0.1"
            echo "DbdPort=$((last + 1))"
            echo "SlurmUser=root"
            echo "PidFile=$dir/run/slurmdbd.pid"
            echo "LogFile=$dir/log/slurmdbd.log"
            echo "StorageType=accounting_storage/mysql"
            echo "StorageHost=localhost"
            echo "StorageUser=root"
            echo "StorageLoc=slurm_acct_db"
        } > "$dir/etc/slurmdbd.conf"
        chmod 0600 "$dir/etc/slurmdbd.conf"
    fi
    local topology_line=""
    if (( racks > 1 )); then topology_line="TopologyPlugin=topology/tree"; fi
    cat > "$conf" <<EOF
# Written by scripts/slurm-lab.sh: a private loopback lab, $nodes nodes x $gpus fake GPUs.
ClusterName=lab$base
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmUser=root
SlurmdUser=root
$auth_lines
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
SlurmdParameters=config_overrides
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
ProctrackType=proctrack/pgid
TaskPlugin=task/none
$accounting_lines
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
$sched_lines
JobRequeue=1
ReturnToService=1
SlurmdTimeout=10
MessageTimeout=5
KillWait=2
MinJobAge=600
MpiDefault=none
$topology_line
NodeName=n[1-$nodes] NodeHostname=localhost NodeAddr=127.0.0.1 Port=[$first-$last] CPUs=$((gpus * 2)) RealMemory=1000 Gres=gpu:$gpus State=UNKNOWN
PartitionName=$partition Nodes=n[1-$nodes] Default=YES MaxTime=INFINITE State=UP
EOF
    echo "NodeName=n[1-$nodes] Name=gpu File=$dir/dev/nvidia[0-$((gpus - 1))]" > "$dir/etc/gres.conf"
    # slurmd reads cgroup.conf even with proctrack/pgid; an absent or empty one logs noise.
    echo "CgroupPlugin=autodetect" > "$dir/etc/cgroup.conf"
    if (( racks > 1 )); then
        local per=$(( (nodes + racks - 1) / racks )) r lo hi leaves=()
        : > "$dir/etc/topology.conf"
        for ((r = 1; r <= racks; r++)); do
            lo=$(( (r - 1) * per + 1 )); hi=$(( r * per < nodes ? r * per : nodes ))
            (( lo > hi )) && continue
            echo "SwitchName=s$r Nodes=n[$lo-$hi]" >> "$dir/etc/topology.conf"
            leaves+=("s$r")
        done
        echo "SwitchName=root Switches=s[1-${#leaves[@]}]" >> "$dir/etc/topology.conf"
    fi
}

if [[ $sched == backfill ]]; then
    sched_lines="SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,sched_interval=2,bf_interval=1,bf_continue,bf_resolution=10
PriorityType=priority/multifactor
DebugFlags=Backfill"
else
    sched_lines="SchedulerType=sched/builtin
SchedulerParameters=batch_sched_delay=0,sched_interval=2"
fi

# --epilog-ack ACKDIR: every node's Epilog is scripts/gantry-epilog.sh waiting for
# `gantry slurm --epilog-ack-dir ACKDIR` (at most 1 s per job).
if [[ -n $epilog_ack ]]; then
    mkdir -p "$dir/etc" "$epilog_ack"
    printf '#!/bin/sh\nGANTRY_EPILOG_ACK_DIR=%s exec %s/gantry-epilog.sh\n' \
        "$(cd "$epilog_ack" && pwd -P)" "$scripts_dir" > "$dir/etc/epilog.sh"
    chmod +x "$dir/etc/epilog.sh"
    sched_lines="$sched_lines
Epilog=$dir/etc/epilog.sh"
fi

# --submit-doorbell ACKDIR: the controller's job_submit plugin is scripts/gantry-job-submit.lua
# for the lab's partition, holding its jobs and ringing gantry's doorbell in ACKDIR.
if [[ -n $submit_doorbell ]]; then
    mkdir -p "$dir/etc" "$submit_doorbell"
    bell_dir=$(cd "$submit_doorbell" && pwd -P)
    sed -e "s|^local GANTRY_PARTITION = .*|local GANTRY_PARTITION = \"$partition\"|" \
        -e "s|^local DOORBELL_DIR = .*|local DOORBELL_DIR = \"$bell_dir\"|" \
        "$scripts_dir/gantry-job-submit.lua" > "$dir/etc/job_submit.lua"
    sched_lines="$sched_lines
JobSubmitPlugins=lua"
fi

if [[ -n $licenses ]]; then
    sched_lines="$sched_lines
Licenses=$licenses"
fi

fail_up() {
    log "bring-up failed: $*"
    local f
    for f in "$dir"/log/*.log "$dir"/munge/munged.log; do
        [[ -f $f ]] || continue
        echo "--- tail of $f" >&2
        tail -n 15 "$f" >&2
    done
    down || true
    exit 1
}

# --accounting: the lab's MariaDB (its socket in DIR/run, no TCP; root by unix socket) and
# slurmdbd, then the cluster, account `lab` and user root registered, before slurmctld.
start_accounting() {
    local base=$1 deadline=$2 db="$dir/db" sock="$dir/run/mysql.sock"
    if [[ ! -d $db/mysql ]]; then
        mariadb-install-db --no-defaults --datadir="$db" --user=root \
            --auth-root-authentication-method=socket --skip-test-db > "$dir/log/mariadb-install.log" 2>&1 ||
            fail_up "mariadb-install-db failed"
    fi
    # Detached, its output in its log: the caller reads this script's stdout to its end.
    setsid mariadbd --no-defaults --datadir="$db" --socket="$sock" --pid-file="$dir/run/mariadb.pid" \
        --skip-networking --user=root --log-error="$dir/log/mariadb.log" \
        --innodb-buffer-pool-size=16M < /dev/null > /dev/null 2>&1 &
    until mariadb --socket="$sock" -e 'select 1' > /dev/null 2>&1; do
        (( SECONDS >= deadline )) && fail_up "MariaDB did not answer after ${timeout_s}s"
        sleep 0.2
    done
    MYSQL_UNIX_PORT=$sock SLURM_CONF=$conf slurmdbd || fail_up "slurmdbd did not start"
    until sacctmgr -n list cluster > /dev/null 2>&1; do
        (( SECONDS >= deadline )) && fail_up "slurmdbd did not answer after ${timeout_s}s"
        sleep 0.2
    done
    sacctmgr -i add cluster "lab$base" > /dev/null
    sacctmgr -i add account lab Cluster="lab$base" > /dev/null
    sacctmgr -i add user root Account=lab Cluster="lab$base" > /dev/null
}

up() {
    if [[ -n $(live_pids; live_pids munge) ]]; then
        log "$dir already has running daemons ($(live_pids; live_pids munge)); run 'down' first"
        exit 1
    fi
    install_missing
    local base
    base=$(pick_ports) || exit 1
    write_config "$base"
    local deadline=$((SECONDS + timeout_s))
    if [[ $auth == munge ]]; then
        chmod 0700 "$dir/munge"
        [[ -f $dir/munge/munge.key ]] || mungekey --create --keyfile="$dir/munge/munge.key" --force
        chmod 0600 "$dir/munge/munge.key"
        munged --force --socket="$dir/munge/munge.sock" --key-file="$dir/munge/munge.key" \
            --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
            --seed-file="$dir/munge/munged.seed" || fail_up "munged did not start"
    fi
    if (( accounting )); then start_accounting "$base" "$deadline"; fi
    slurmctld -f "$conf" || fail_up "slurmctld did not start"
    local i
    for ((i = 1; i <= nodes; i++)); do
        slurmd -f "$conf" -N "n$i" || fail_up "slurmd n$i did not start"
    done
    local idle
    while :; do
        idle=$(sinfo -h -N -o '%N %T' 2>/dev/null | awk '$2 == "idle"' | sort -u | wc -l || true)
        (( idle == nodes )) && break
        (( SECONDS >= deadline )) && fail_up "only $idle of $nodes nodes idle after ${timeout_s}s"
        sleep 0.2
    done
    # slurmctld's first scheduling cycle comes about 3 s after it starts. A job submitted
    # before it starts at submission anyway, but a held job released then waits for that
    # cycle: wait for it, so that a run does not begin with a pass a running cluster has.
    local cycles
    while :; do
        cycles=$(sdiag 2>/dev/null | awk '/^Main schedule statistics/ { main = 1 }
            main && /Total cycles:/ { print $3; exit }' || true)
        (( ${cycles:-0} >= 1 )) && break
        (( SECONDS >= deadline )) && fail_up "no scheduling cycle after ${timeout_s}s"
        sleep 0.2
    done
    local with=""
    (( accounting )) && with=", accounting (slurmdbd on port $((base + nodes + 1)))"
    log "up: $nodes nodes x $gpus GPUs in $racks rack(s), partition $partition, ports $base-$((base + nodes))$with, $SECONDS s"
    echo "export SLURM_CONF=$conf"
}

case "$action" in
    up) up ;;
    down) down ;;
    *) usage ;;
esac
