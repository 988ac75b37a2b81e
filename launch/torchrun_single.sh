#!/usr/bin/env bash
# launch/torchrun_single.sh sft --config configs/res/sft_qwen3.5_4b.yaml [KEY=VALUE ...]
# One node, one process per GPU: torchrun runs the `envtrain` console script on every rank.
#   NPROC   processes (default: the GPUs nvidia-smi lists, else 1)
set -euo pipefail
if [ "$#" -lt 1 ]; then
  echo "usage: $0 sft|grpo --config FILE [KEY=VALUE ...]" >&2
  exit 2
fi
if [ -z "${NPROC:-}" ]; then
  NPROC=$(nvidia-smi -L 2>/dev/null | wc -l || true)
  [ "${NPROC:-0}" -ge 1 ] || NPROC=1
fi
exec torchrun --standalone --nproc_per_node "$NPROC" --no-python envtrain "$@"
