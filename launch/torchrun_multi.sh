#!/usr/bin/env bash
# MASTER_ADDR=node0 NNODES=4 NODE_RANK=0 launch/torchrun_multi.sh sft --config configs/legoenv/sft.yaml [KEY=VALUE ...]
# Several nodes: run this on every node with its NODE_RANK (0 .. NNODES-1); they meet at MASTER_ADDR:MASTER_PORT
# through torchrun's c10d rendezvous. Under Slurm use launch/slurm.sbatch instead, which sets all of this.
#   NNODES, NODE_RANK, MASTER_ADDR (required); MASTER_PORT (29500); NPROC per node (GPUs listed, else 1); RDZV_ID (envtrain)
set -euo pipefail
if [ "$#" -lt 1 ]; then
  echo "usage: MASTER_ADDR=HOST NNODES=N NODE_RANK=I $0 sft|grpo --config FILE [KEY=VALUE ...]" >&2
  exit 2
fi
: "${NNODES:?set NNODES}" "${NODE_RANK:?set NODE_RANK}" "${MASTER_ADDR:?set MASTER_ADDR}"
MASTER_PORT=${MASTER_PORT:-29500}
if [ -z "${NPROC:-}" ]; then
  NPROC=$(nvidia-smi -L 2>/dev/null | wc -l || true)
  [ "${NPROC:-0}" -ge 1 ] || NPROC=1
fi
exec torchrun --nnodes "$NNODES" --node_rank "$NODE_RANK" --nproc_per_node "$NPROC" \
  --rdzv_backend c10d --rdzv_endpoint "$MASTER_ADDR:$MASTER_PORT" --rdzv_id "${RDZV_ID:-envtrain}" \
  --no-python envtrain "$@"
