#!/bin/bash
# A grid sweep as a Slurm job array, then one merge. Submit from the repository's root:
#
#   sbatch --array=0-15 deploy/slurm-sweep.sh scenarios/grid.toml
#   # the merge runs by itself once every task has succeeded (see the end of this script)
#
# Each array task runs one slice of the grid's units (configurations × replications):
# `--partition auto` reads SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_MIN and SLURM_ARRAY_TASK_COUNT,
# so the slice count is whatever --array says. The assignment of units to slices depends only
# on the grid,
# so a failed task can be re-run alone (sbatch --array=7 ...) and the merge is still exact.
# The merge reloads the scenario from the path the slices recorded: use a shared file system.
#
#SBATCH --job-name=shardsim-sweep
#SBATCH --cpus-per-task=2          # every core of a task is used (configurations in parallel)
#SBATCH --mem=4G                   # shardsim refuses up front a slice that would need more
#SBATCH --time=01:00:00
#SBATCH --output=slurm-%A_%a.out

set -euo pipefail

scenario="${1:?usage: sbatch --array=0-(M-1) deploy/slurm-sweep.sh SCENARIO [OUT_DIR]}"
out="${2:-output/$(basename "$scenario" .toml)-sweep}"
shardsim="${SHARDSIM:-target/release/shardsim}"   # build once first: cargo build --release

# This task's slice. --no-fail is implied for slices: a configuration that meets no target
# is a result, not a failed task.
"$shardsim" run "$scenario" \
    --partition auto \
    --threads "${SLURM_CPUS_PER_TASK:-2}" \
    --quiet \
    --out "$out/parts/slice-${SLURM_ARRAY_TASK_ID}"

# The array's first task queues the merge, once, to start after every task of this array has
# succeeded (afterok on the whole array).
if [ "${SLURM_ARRAY_TASK_ID}" = "${SLURM_ARRAY_TASK_MIN:-0}" ]; then
    sbatch --dependency="afterok:${SLURM_ARRAY_JOB_ID}" \
        --job-name=shardsim-merge --cpus-per-task=1 --mem=2G --time=00:10:00 \
        --wrap="$shardsim merge $out/parts/slice-* --out $out/merged"
fi
