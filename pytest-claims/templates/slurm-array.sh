#!/bin/bash
# pytest-claims on Slurm: `bash slurm-array.sh` on the login node submits one array task per pytest-split shard,
# then the merge, which starts when every shard has ended (afterany: a shard whose claims fail still wrote its
# report). Run from your project's folder, with pytest-claims and its `split` and `xdist` extras installed, and a
# committed .test_durations for balanced shards. The lines marked `# claims: shard` and `# claims: merge` run as
# written in pytest-claims' own CI (.ci/steps/templates.sh), on two shards of its example project.
#SBATCH --job-name=claims
#SBATCH --cpus-per-task=16
#SBATCH --time=04:00:00
#SBATCH --output=logs/claims-%A-%a.out
set -euo pipefail
SPLITS="${SPLITS:-4}"
if [ -z "${SLURM_JOB_ID:-}" ]; then  # the login node: submit the array, then the merge after it
  mkdir -p logs
  array="$(sbatch --parsable --array=1-"$SPLITS" --export=ALL,SPLITS="$SPLITS" "$0")"
  sbatch --dependency=afterany:"${array%%;*}" --job-name=claims-merge --cpus-per-task=1 --time=00:20:00 \
    --output=logs/claims-merge-%j.out --export=ALL,SPLITS="$SPLITS",CLAIMS_STEP=merge "$0"
  exit 0
fi
if [ "${CLAIMS_STEP:-shard}" = merge ]; then
  pytest-claims-merge out/g*/verdicts.json -o merged  # claims: merge
else
  pytest -n "$SLURM_CPUS_PER_TASK" --splits "$SLURM_ARRAY_TASK_COUNT" --group "$SLURM_ARRAY_TASK_ID" -o claims_report_dir="out/g$SLURM_ARRAY_TASK_ID" --claims-store-dir="stores/g$SLURM_ARRAY_TASK_ID"  # claims: shard
fi
