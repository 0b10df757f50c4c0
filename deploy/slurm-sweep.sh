#!/bin/bash
# A grid sweep on Slurm: one job-array task per slice, then a merge that runs whatever the tasks'
# outcome and names every slice that did not finish, with the command that re-runs them.
# Run it (not sbatch it) from the repository's root, on a file system the nodes share:
#
#   deploy/slurm-sweep.sh SCENARIO SLICES [OUT_DIR]                 the sweep, then its merge
#   deploy/slurm-sweep.sh SCENARIO SLICES OUT_DIR --only 3,7        re-run slices 3 and 7, merge again
#
# Slices are numbered 0 … SLICES−1, as the array's tasks are. Task K writes OUT_DIR/parts/slice-K;
# the merge writes OUT_DIR/merged (byte-identical to one `shardsim run`); the logs are in
# OUT_DIR/logs, named by job (slice-K.JOB.out, merge.JOB.out), so a re-run keeps the report of the
# run it repairs. A whole sweep first clears OUT_DIR/parts, OUT_DIR/merged and OUT_DIR/logs, so a
# sweep with another slice count can reuse the folder; a re-run (--only, which takes Slurm's array
# syntax: 3,7 or 0-15:4) keeps the other slices. A sweep whose jobs are still queued or running in
# OUT_DIR (OUT_DIR/logs/jobs) is never cleared or joined: the script refuses, naming them.
# Before anything is submitted, slice 0 is checked with `shardsim run --dry-run` under the task's
# memory and cores: a scenario, slice count or memory that cannot work fails here, in one line. Each task asks for SHARDSIM_TASK_CPUS cores (default 2) and
# SHARDSIM_TASK_MEM memory (default 4G), and shardsim refuses before any work a slice that would
# need more; other sbatch options come from the environment (SBATCH_PARTITION, SBATCH_ACCOUNT,
# SBATCH_TIMELIMIT, …). SHARDSIM names the binary (default: target/release/shardsim of the
# repository this script is in).
#
# `sbatch --array=… deploy/slurm-sweep.sh SCENARIO SLICES [OUT_DIR]` also runs the tasks named by
# the array (ranges, steps and lists alike) as slices of SLICES, without queueing a merge.

set -euo pipefail

usage="usage: deploy/slurm-sweep.sh SCENARIO SLICES [OUT_DIR] [--only K[,K…]]"
fail() { echo "slurm-sweep: $*" >&2; exit 2; }

scenario="${1:-}"
slices="${2:-}"
[ -n "$scenario" ] && [ -n "$slices" ] || fail "$usage"
[[ "$slices" =~ ^[1-9][0-9]*$ ]] || fail "SLICES is ${slices@Q}: give the slice count, a whole number from 1 ($usage)"
out="${3:-output/$(basename "$scenario" .toml)-sweep}"
only=""
if [ "${4:-}" = "--only" ]; then
  [ -n "${5:-}" ] || fail "--only needs the slices to re-run, e.g. --only 3,7 ($usage)"
  only="$5"
  [ -z "${6:-}" ] || fail "unexpected ${6@Q} after --only $only ($usage)"
elif [ -n "${4:-}" ]; then
  fail "unexpected ${4@Q} ($usage)"
fi
repo="$(cd "$(dirname "$(readlink -m "${BASH_SOURCE[0]}")")/.." && pwd)"
shardsim="${SHARDSIM:-$repo/target/release/shardsim}"

# The slices an array spec names (3,7 / 0-15:4 / 2-5, with an optional %N limit), one a line.
expand_array() {
  local item first last step items
  IFS=',' read -ra items <<<"${1%\%*}"
  for item in "${items[@]}"; do
    if [[ "$item" =~ ^([0-9]+)$ ]]; then
      echo "${BASH_REMATCH[1]}"
    elif [[ "$item" =~ ^([0-9]+)-([0-9]+)(:([1-9][0-9]*))?$ ]]; then
      first="${BASH_REMATCH[1]}" last="${BASH_REMATCH[2]}" step="${BASH_REMATCH[4]:-1}"
      [ "$first" -le "$last" ] || return 1
      seq "$first" "$step" "$last"
    else
      return 1
    fi
  done
}

run_slice() {
  local task="$SLURM_ARRAY_TASK_ID"
  [ "$task" -lt "$slices" ] \
    || fail "array task $task is not a slice of $slices (slices are 0 … $((slices - 1))): nothing run"
  local memory=()
  [ -n "${SHARDSIM_TASK_MEM:-}" ] && memory=(--max-memory "$SHARDSIM_TASK_MEM")
  # Without --max-memory shardsim takes the job's own (SLURM_MEM_PER_NODE / _PER_CPU).
  "$shardsim" run "$scenario" --partition "$task/$slices" --threads "${SLURM_CPUS_PER_TASK:-1}" \
    --quiet --no-fail "${memory[@]}" --out "$out/parts/slice-$task"
  if [ -z "${SHARDSIM_SWEEP_STEP:-}" ] && [ "$task" = "${SLURM_ARRAY_TASK_MIN:-$task}" ]; then
    echo "slice $task of $slices done; no merge was queued (sbatch was called directly): when every slice is done, run"
    echo "  $shardsim merge $(printf %q "$out/parts") --out $(printf %q "$out/merged")"
  fi
}

run_merge() {
  local again
  again="$(printf '%q ' "${SHARDSIM_SWEEP_SCRIPT:-$self}" "$scenario" "$slices" "$out")--only"
  mkdir -p "$out/parts"
  "$shardsim" merge "$out/parts" --out "$out/merged" --slices "$slices" --rerun "$again"
}

# Refuses to touch OUT_DIR while a sweep submitted into it still has jobs queued or running.
refuse_running_sweep() {
  local jobs_file="$out/logs/jobs" jobs live
  [ -f "$jobs_file" ] || return 0
  jobs="$(tr -s ' \n' ',' <"$jobs_file")"
  jobs="${jobs%,}"
  [ -n "$jobs" ] || return 0
  live="$(squeue -h -j "$jobs" -o %i 2>/dev/null | tr -s ' \n' ' ')" || live=""
  live="${live% }"
  [ -z "$live" ] \
    || fail "a sweep into $out is still queued or running (jobs ${live// /, }): wait for it (squeue -j $jobs) or cancel it (scancel ${jobs//,/ }); nothing submitted"
}

submit() {
  [ -x "$shardsim" ] || fail "no shardsim binary at $shardsim: build it first (cargo build --release) or set SHARDSIM"
  local spec="${only:-0-$((slices - 1))}" listed
  listed="$(expand_array "$spec")" \
    || fail "--only ${spec@Q} is not an array spec such as 3,7 or 0-15:4: nothing submitted"
  while read -r k; do
    [ "$k" -lt "$slices" ] \
      || fail "--only names slice $k, but the slices are 0 … $((slices - 1)): nothing submitted"
  done <<<"$listed"
  local cpus="${SHARDSIM_TASK_CPUS:-2}" memory="${SHARDSIM_TASK_MEM:-4G}" array merge checked
  [[ "$cpus" =~ ^[1-9][0-9]*$ ]] || fail "SHARDSIM_TASK_CPUS is ${cpus@Q}: give a whole number of cores; nothing submitted"
  [[ "$memory" =~ ^[1-9][0-9]*[KMGT]?$ ]] \
    || fail "SHARDSIM_TASK_MEM is ${memory@Q}: give Slurm's memory size, such as 4G or 800M; nothing submitted"
  # Slice 0 holds the most units: if it is admitted under the task's memory and cores, all are.
  checked="$("$shardsim" run "$scenario" --partition "0/$slices" --dry-run --quiet \
    --threads "$cpus" --max-memory "$memory" 2>&1)" \
    || fail "slice 0 of $slices cannot run in a task of $cpus cores and $memory: ${checked#error: }; nothing submitted"
  command -v sbatch >/dev/null || fail "sbatch is not on the PATH: run this on a Slurm login node; nothing submitted"
  refuse_running_sweep
  if [ -z "$only" ]; then
    rm -rf -- "$out/parts" "$out/merged" "$out/logs"
  fi
  mkdir -p "$out/logs"
  # The jobs get this environment (--export=ALL is sbatch's default): the binary, the task's
  # memory, the step and this script's own path (Slurm runs a copy of it).
  export SHARDSIM SHARDSIM_TASK_MEM="$memory" SHARDSIM_SWEEP_SCRIPT="$self"
  array="$(SHARDSIM_SWEEP_STEP=slice sbatch --parsable --array="$spec" \
    --job-name=shardsim-sweep --cpus-per-task="$cpus" --mem="$memory" \
    --output="$out/logs/slice-%a.%A.out" "$self" "$scenario" "$slices" "$out")"
  array="${array%%;*}"
  echo "$array" >>"$out/logs/jobs"
  merge="$(SHARDSIM_SWEEP_STEP=merge sbatch --parsable --dependency="afterany:$array" \
    --job-name=shardsim-merge --cpus-per-task=1 --mem="${SHARDSIM_MERGE_MEM:-2G}" \
    --output="$out/logs/merge.%j.out" "$self" "$scenario" "$slices" "$out")"
  merge="${merge%%;*}"
  echo "$merge" >>"$out/logs/jobs"
  echo "slices $spec of $slices: job $array; merge: job $merge, after them whatever their outcome"
  echo "follow: squeue -j $array,$merge; the merge's report: $out/logs/merge.$merge.out; the result: $out/merged"
}

self="$(readlink -m "${BASH_SOURCE[0]}")"
if [ "${SHARDSIM_SWEEP_STEP:-}" = "merge" ]; then
  run_merge
elif [ -n "${SLURM_ARRAY_TASK_ID:-}" ]; then
  run_slice
else
  # Made absolute for the jobs (which may start elsewhere), each checked first in its own words.
  [ -f "$scenario" ] || fail "$scenario: no such scenario file (from $(pwd)); nothing submitted"
  scenario="$(readlink -m "$scenario")"
  out="$(readlink -m "$out")"
  SHARDSIM="$(readlink -m "$shardsim")"
  shardsim="$SHARDSIM"
  submit
fi
