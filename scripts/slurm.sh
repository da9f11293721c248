#!/usr/bin/env bash
# A real single-node SLURM cluster on this machine, for the tests that need one (tests/slurm/).
#
#   scripts/slurm.sh install   # Debian's slurm-wlm and munge (root + apt); nothing when already there
#   scripts/slurm.sh start     # munged, slurmctld, slurmd; partitions `debug`, `urgent` (preempts debug) and `shared` (4 jobs per core); waits until idle
#   scripts/slurm.sh status    # exit 0 when the node answers and is usable
#   scripts/slurm.sh stop      # stop the daemons (state stays in $LIT_RL_SLURM_DIR)
#
# The node is configured for the machine it runs on (hostname, cores, memory, from `slurmd -C`).
# Configuration goes to /etc/slurm/slurm.conf (where sbatch, squeue and scontrol look, so submitit
# finds it); state and logs go to $LIT_RL_SLURM_DIR (default /tmp/lit_rl_slurm). No accounting
# database: sacct is not available, which submitit tolerates.
set -euo pipefail

DIR=${LIT_RL_SLURM_DIR:-/tmp/lit_rl_slurm}
CONF=/etc/slurm/slurm.conf
MARK="# written by lit_rl scripts/slurm.sh"

need_root() {
    if [ "$(id -u)" != 0 ]; then
        echo "scripts/slurm.sh $1: needs root (apt and the SLURM daemons); running as $(id -un)" >&2
        exit 2
    fi
}

install() {
    if command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null; then
        return 0
    fi
    need_root install
    command -v apt-get >/dev/null || { echo "scripts/slurm.sh install: no apt-get on this machine" >&2; exit 2; }
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurm-wlm munge >/dev/null
}

write_conf() {
    local host cpus mem
    host=$(hostname -s)
    cpus=$(nproc)
    # Leave 1 GiB to the OS; RealMemory in MiB as slurmd -C reports it.
    mem=$(slurmd -C | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p')
    mem=$((mem > 2048 ? mem - 1024 : mem))
    if [ -f "$CONF" ] && ! grep -q "$MARK" "$CONF"; then
        echo "scripts/slurm.sh: $CONF exists and was not written by this script; not replacing it" >&2
        exit 2
    fi
    mkdir -p /etc/slurm "$DIR/state" "$DIR/spool"
    cat >"$CONF" <<EOF
$MARK
ClusterName=litrl
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/slurmctld.log
SlurmdLogFile=$DIR/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
JobRequeue=1
# A requeued job waits cred_expire seconds before it may start again (default 120): tests requeue often.
AuthInfo=cred_expire=10
KillWait=20
MinJobAge=600
InactiveLimit=0
Waittime=0
PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
NodeName=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP PriorityTier=1
PartitionName=urgent Nodes=$host MaxTime=INFINITE State=UP PriorityTier=10
# Four jobs per core: many small workers at once (make chaos's 8 Optuna workers on a 2-core machine).
PartitionName=shared Nodes=$host MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
EOF
}

status() {
    local host state
    host=$(hostname -s)
    # sinfo waits about 10 s for a controller that is not there.
    pgrep -x slurmctld >/dev/null || return 1
    state=$(timeout 5 sinfo -h -n "$host" -o %t 2>/dev/null | head -1) || return 1
    case "$state" in idle* | mix* | alloc*) return 0 ;; *) return 1 ;; esac
}

start() {
    need_root start
    install
    # One start at a time: processes (test workers) that start the cluster together would each start daemons.
    mkdir -p "$DIR"
    exec 9>"$DIR/start.lock"
    flock 9
    if status; then
        local before
        before=$(cat "$CONF" 2>/dev/null || true)
        write_conf
        # A configuration this script has changed since the daemons started (a new partition): load it.
        [ "$before" = "$(cat "$CONF")" ] || { scontrol reconfigure && sleep 2; }
        echo "slurm: already running ($(sinfo -h -o '%P %D %t' | tr '\n' ' '))"
        return 0
    fi
    write_conf
    mkdir -p /run/munge && chown munge:munge /run/munge
    if ! pgrep -x munged >/dev/null; then
        runuser -u munge -- /usr/sbin/munged 9>&-  # the daemons must not inherit (and hold) the start lock
    fi
    pgrep -x slurmctld >/dev/null || slurmctld 9>&-
    pgrep -x slurmd >/dev/null || slurmd 9>&-
    local host
    host=$(hostname -s)
    for _ in $(seq 60); do
        if ! pgrep -x slurmctld >/dev/null || ! pgrep -x slurmd >/dev/null; then
            echo "slurm: a daemon exited while starting; see $DIR/slurmctld.log and $DIR/slurmd.log" >&2
            exit 1
        fi
        if status; then
            echo "slurm: node $host up ($(sinfo -h -o '%P %D %t' | tr '\n' ' ')); logs in $DIR"
            return 0
        fi
        # A node left down by an earlier run comes back here.
        scontrol update nodename="$host" state=resume >/dev/null 2>&1 || true
        sleep 1
    done
    echo "slurm: node $host did not come up; see $DIR/slurmctld.log and $DIR/slurmd.log" >&2
    sinfo >&2 || true
    exit 1
}

stop() {
    pkill -x slurmd 2>/dev/null || true
    pkill -x slurmctld 2>/dev/null || true
    for _ in $(seq 60); do
        pgrep -x slurmd >/dev/null || pgrep -x slurmctld >/dev/null || break
        sleep 0.5
    done
    echo "slurm: stopped"
}

case "${1:-}" in
install) install ;;
start) start ;;
stop) stop ;;
status) status && echo "slurm: up" || { echo "slurm: not running" >&2; exit 1; } ;;
*) echo "usage: scripts/slurm.sh install|start|status|stop" >&2; exit 2 ;;
esac
