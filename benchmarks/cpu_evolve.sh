#!/usr/bin/env bash
# Evolve every bundled example on the CPU (Triton interpreter, modelled timing on nvidia-h200)
# from the offline operators alone, and keep each run's JSON. Used for docs/results.md §3.
# Usage: bash benchmarks/cpu_evolve.sh OUTDIR [STEPS]
set -u
OUT=${1:?output folder}; STEPS=${2:-8}
mkdir -p "$OUT"
KE=${KE:-.venv/bin/kernelevolve}
for ex in fused_elementwise rmsnorm softmax gemm_epilogue embedding_bag fm_interaction; do
  start=$(date +%s)
  $KE evolve examples/$ex/problem.py --device cpu --max-steps "$STEPS" --no-warm-start \
    --db "$OUT/history.db" --out "$OUT/${ex}_evolved.py" --json > "$OUT/evolve_$ex.json" 2> "$OUT/evolve_$ex.log"
  echo "$ex rc=$? $(( $(date +%s) - start ))s"
done
