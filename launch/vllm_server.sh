#!/usr/bin/env bash
# CUDA_VISIBLE_DEVICES=0,1,2,3 launch/vllm_server.sh Qwen/Qwen3.8-27B [extra vllm serve flags]
# The generation server for GRPO server mode (vllm.mode: server, vllm.server_base_url: http://THIS_HOST:PORT).
# It is vLLM's own server with what TRL's trainer needs: the NCCL weight-transfer endpoint (the trainer pushes its
# weights after each step), processed logprobs (temperature and filters applied, for importance-sampling correction),
# and dev mode (those endpoints live behind it). This is what `trl vllm-serve` runs, minus its deprecation.
#   TP tensor parallel (1), DP data parallel replicas (GPUs / TP), PORT (8000), HOST (0.0.0.0),
#   MAX_MODEL_LEN (65536), GPU_MEMORY_UTILIZATION (0.9)
set -euo pipefail
if [ "$#" -lt 1 ]; then
  echo "usage: $0 MODEL [extra vllm serve flags]" >&2
  exit 2
fi
MODEL=$1
shift
TP=${TP:-1}
if [ -z "${DP:-}" ]; then
  GPUS=$(nvidia-smi -L 2>/dev/null | wc -l || true)
  [ "${GPUS:-0}" -ge 1 ] || GPUS=1
  DP=$(( GPUS / TP > 0 ? GPUS / TP : 1 ))
fi
export VLLM_SERVER_DEV_MODE=1
exec vllm serve "$MODEL" \
  --host "${HOST:-0.0.0.0}" --port "${PORT:-8000}" \
  --tensor-parallel-size "$TP" --data-parallel-size "$DP" \
  --gpu-memory-utilization "${GPU_MEMORY_UTILIZATION:-0.9}" --max-model-len "${MAX_MODEL_LEN:-65536}" \
  --weight-transfer-config '{"backend": "nccl"}' --logprobs-mode processed_logprobs --max-logprobs -1 \
  "$@"
