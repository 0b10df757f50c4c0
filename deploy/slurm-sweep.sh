#!/bin/bash
# A grid sweep on Slurm: one job-array task per slice, then a merge that runs whatever the tasks'
# outcome and names every slice that did not finish, with the command that re-runs them.
# Run it (not sbatch it) from the repository's root, on a file system the nodes share:
#
#   deploy/slurm-sweep.sh SCENARIO SLICES [OUT_DIR]                 the sweep, then its merge
#   deploy/slurm-sweep.sh SCENARIO SLICES OUT_DIR --only 3,7        re-run slices 3 and 7, merge again
#
# Slices are numbered 0 … SLICES−1, as the array's tasks are. Task K writes OUT_DIR/parts/slice-K;
# the merge writes OUT_DIR/merged (byte-identical to one `shardsim run`); every log is in
# OUT_DIR/logs. A whole sweep first clears OUT_DIR/parts and OUT_DIR/merged, so a sweep with another
# slice count can reuse the folder; a re-run (--only, which takes Slurm's array syntax: 3,7 or
# 0-15:4) keeps the other slices. Each task asks for SHARDSIM_TASK_CPUS cores (default 2) and
# SHARDSIM_TASK_MEM memory (default 4G), and shardsim refuses before any work a slice that would
# need more; other sbatch options come from the environment (SBATCH_PARTITION, SBATCH_ACCOUNT,
# SBATCH_TIMELIMIT, …). SHARDSIM names the binary (default target/release/shardsim).
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
  only="${5:?--only needs the slices to re-run, e.g. --only 3,7}"
elif [ -n "${4:-}" ]; then
  fail "unexpected ${4@Q} ($usage)"
fi
shardsim="${SHARDSIM:-target/release/shardsim}"

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
  "$shardsim" merge "$out/parts" --out "$out/merged" --rerun "$again"
}

submit() {
  [ -x "$shardsim" ] || fail "no shardsim binary at $shardsim: build it first (cargo build --release) or set SHARDSIM"
  [ -f "$scenario" ] || fail "$scenario: no such scenario file"
  command -v sbatch >/dev/null || fail "sbatch is not on the PATH: run this on a Slurm login node"
  local spec="${only:-0-$((slices - 1))}" listed
  listed="$(expand_array "$spec")" \
    || fail "--only ${spec@Q} is not an array spec such as 3,7 or 0-15:4: nothing submitted"
  while read -r k; do
    [ "$k" -lt "$slices" ] \
      || fail "--only names slice $k, but the slices are 0 … $((slices - 1)): nothing submitted"
  done <<<"$listed"
  if [ -z "$only" ]; then
    rm -rf -- "$out/parts" "$out/merged"
  fi
  mkdir -p "$out/logs"
  local cpus="${SHARDSIM_TASK_CPUS:-2}" memory="${SHARDSIM_TASK_MEM:-4G}" array merge
  # The jobs get this environment (--export=ALL is sbatch's default): the binary, the task's
  # memory, the step and this script's own path (Slurm runs a copy of it).
  export SHARDSIM SHARDSIM_TASK_MEM="$memory" SHARDSIM_SWEEP_SCRIPT="$self"
  array="$(SHARDSIM_SWEEP_STEP=slice sbatch --parsable --array="$spec" \
    --job-name=shardsim-sweep --cpus-per-task="$cpus" --mem="$memory" \
    --output="$out/logs/slice-%a.out" "$self" "$scenario" "$slices" "$out")"
  array="${array%%;*}"
  merge="$(SHARDSIM_SWEEP_STEP=merge sbatch --parsable --dependency="afterany:$array" \
    --job-name=shardsim-merge --cpus-per-task=1 --mem="${SHARDSIM_MERGE_MEM:-2G}" \
    --output="$out/logs/merge.out" "$self" "$scenario" "$slices" "$out")"
  merge="${merge%%;*}"
  echo "slices $spec of $slices: job $array; merge: job $merge, after them whatever their outcome"
  echo "follow: squeue -j $array,$merge; the merge's report: $out/logs/merge.out; the result: $out/merged"
}

self="$(readlink -f "${BASH_SOURCE[0]}")"
if [ "${SHARDSIM_SWEEP_STEP:-}" = "merge" ]; then
  run_merge
elif [ -n "${SLURM_ARRAY_TASK_ID:-}" ]; then
  run_slice
else
  scenario="$(readlink -f "$scenario")"
  out="$(readlink -m "$out")"
  SHARDSIM="$(readlink -f "$shardsim")"
  shardsim="$SHARDSIM"
  submit
fi
