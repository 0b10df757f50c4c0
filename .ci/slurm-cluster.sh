# A throwaway one-node Slurm for the scale-out tests, sourced by .ci/run:
#   slurm_up DIR    munged with its own key and socket, slurmctld and slurmd on loopback with
#                   their state, logs and spool under DIR; exports SLURM_CONF
#   slurm_down DIR  stops them (every job with them) and removes DIR
# Needs root (slurmd runs jobs as their submitter) and Debian's slurm-wlm and munge.

slurm_free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

slurm_up() {
  local dir="$1" node cpus memory_mb ctld_port slurmd_port
  node="$(hostname -s)"
  cpus="$(nproc)"
  memory_mb=$(( $(awk '/MemTotal/ { print $2 }' /proc/meminfo) / 1024 - 1024 ))
  ctld_port="$(slurm_free_port)"
  slurmd_port="$(slurm_free_port)"
  mkdir -p "$dir/munge" "$dir/state" "$dir/spool" "$dir/log"
  chmod 700 "$dir/munge"
  mungekey --create --keyfile="$dir/munge/munge.key" >/dev/null 2>&1 \
    || dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
  chmod 600 "$dir/munge/munge.key"
  munged --force --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" \
    --seed-file="$dir/munge/munged.seed" || return 1
  cat >"$dir/slurm.conf" <<CONF
ClusterName=shardsim-ci
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
ReturnToService=2
MinJobAge=600
DefMemPerCPU=1000
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$memory_mb State=UNKNOWN
PartitionName=ci Nodes=$node Default=YES MaxTime=INFINITE State=UP
CONF
  export SLURM_CONF="$dir/slurm.conf"
  slurmctld -f "$SLURM_CONF" -i || return 1
  slurmd -f "$SLURM_CONF" || return 1
  for _ in $(seq 100); do
    sinfo -h -o %t 2>/dev/null | grep -qE '^(idle|mix|alloc)' && return 0
    sleep 0.2
  done
  echo "Slurm did not come up:"; tail -5 "$dir/log/slurmctld.log" "$dir/log/slurmd.log"
  return 1
}

slurm_down() {
  local dir="$1"
  [ -n "${SLURM_CONF:-}" ] && scancel --full --quiet -u "$(id -un)" 2>/dev/null
  for pidfile in "$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/munge/munged.pid"; do
    [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null
  done
  for _ in $(seq 50); do
    [ -e "$dir/slurmd.pid" ] || [ -e "$dir/slurmctld.pid" ] || [ -e "$dir/munge/munged.pid" ] || break
    sleep 0.1
  done
  rm -rf "$dir"
}
