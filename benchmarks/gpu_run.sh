#!/usr/bin/env bash
# The H200 runs behind docs/results.md: eval the bundled examples, evolve some (then time the
# exported dispatcher), optionally the editor flow (LSP) and the timing self-check, all measured.
# Usage on the device machine (repo root, .whl carried):
#   [EVAL="a b"] [EVOLVE="c"] [STEPS=N] [PARALLEL=N] [LSP=example] [SUITE=1] [TIME_BUDGET=S] [DISPATCH="x y"] [EVAL_EVOLVED="x y"] bash benchmarks/gpu_run.sh
# EVAL defaults to all six examples, EVOLVE to none; EVAL= (empty) evaluates none. PARALLEL unset:
# the engine's default (several evaluations per GPU, timed regions exclusive through the GPU lock).
set -u
OUT=${OUT:-./gpu-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
python3 -m pip install -q --no-index --no-deps --no-build-isolation --no-compile --target /tmp/site . >/dev/null 2>&1 || exit 1
export PYTHONPATH=/tmp/site
KE="python3 -m kernelevolve.server.cli"
DB="$OUT/history.db"
WORK=/tmp/kernelevolve-gpu-run; mkdir -p "$WORK"
EVAL=${EVAL-"rmsnorm gemm_epilogue embedding_bag softmax fused_elementwise fm_interaction"}
EVOLVE=${EVOLVE-""}
STEPS=${STEPS:-10}
PAR="${PARALLEL:+--parallel $PARALLEL} ${TIME_BUDGET:+--time-budget $TIME_BUDGET}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee -a "$OUT/log.txt"
echo "commit $(git rev-parse HEAD 2>/dev/null || echo '?') nproc $(nproc)" | tee -a "$OUT/log.txt"
eval_one() {  # eval_one NAME CANDIDATE_FILE KEY
  echo "== eval $3 $(date +%T)" | tee -a "$OUT/log.txt"
  timeout ${EVAL_TIMEOUT:-240} $KE eval examples/$1/problem.py "$2" --json --db "$DB" \
    > "$OUT/r_$3.json" 2>>"$OUT/log.txt"
  echo "rc=$?" | tee -a "$OUT/log.txt"
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print({k: d.get(k) for k in ('verdict','stage','reason','timing','speedup','speedup_vs_eager','speedup_vs_compile','roofline_fraction')})" "$OUT/r_$3.json" 2>&1 | tee -a "$OUT/log.txt"
}
for ex in $EVAL; do
  eval_one "$ex" "examples/$ex/candidate.py" "eval_$ex"
  if ! grep -q '"verdict": "correct"' "$OUT/r_eval_$ex.json" && [ -n "$EVOLVE" ]; then
    echo "eval of $ex failed: skipping the evolve runs (see log)" | tee -a "$OUT/log.txt"; EVOLVE=""
  fi
done
for ex in ${EVAL_EVOLVED:-}; do  # re-verify and re-time a committed evolved kernel, examples/X/h200/
  eval_one "$ex" "examples/$ex/h200/${ex}_evolved.py" "evalevolved_$ex"
done
for ex in $EVOLVE; do
  echo "== evolve $ex $(date +%T) steps $STEPS ${PAR:-default parallel}" | tee -a "$OUT/log.txt"
  mkdir -p "$WORK/$ex"
  timeout ${EVOLVE_TIMEOUT:-300} $KE evolve examples/$ex/problem.py --seed examples/$ex/candidate.py --max-steps $STEPS \
    $PAR --no-warm-start --out "$WORK/$ex/${ex}_evolved.py" --json --db "$DB" > "$OUT/r_evolve_$ex.json" 2>>"$OUT/log.txt"
  echo "rc=$? $(date +%T)" | tee -a "$OUT/log.txt"
  tail -c 1500 "$OUT/r_evolve_$ex.json" | tee -a "$OUT/log.txt"; echo
  if [ -f "$WORK/$ex/${ex}_dispatch.py" ]; then
    cp "$WORK/$ex/${ex}_evolved.py" "$OUT/r_kernel_$ex.py.txt"
    cp "$WORK/$ex/${ex}_dispatch.py" "$OUT/r_dispatchfile_$ex.py.txt"
    echo "== dispatch check $ex $(date +%T)" | tee -a "$OUT/log.txt"
    timeout ${DISPATCH_TIMEOUT:-180} python3 benchmarks/dispatch_check.py examples/$ex/problem.py \
      "$WORK/$ex/${ex}_dispatch.py" --json "$OUT/r_dispatch_$ex.json" 2>&1 | tail -30 | tee -a "$OUT/log.txt"
  fi
done
for ex in ${DISPATCH:-}; do  # a dispatcher already in the tree, e.g. examples/X/h200/X_dispatch.py
  echo "== dispatch check $ex (committed) $(date +%T)" | tee -a "$OUT/log.txt"
  timeout ${DISPATCH_TIMEOUT:-180} python3 benchmarks/dispatch_check.py examples/$ex/problem.py \
    "examples/$ex/h200/${ex}_dispatch.py" --json "$OUT/r_dispatch_$ex.json" 2>&1 | tail -30 | tee -a "$OUT/log.txt"
done
if [ -n "${LSP:-}" ]; then
  echo "== lsp $LSP $(date +%T)" | tee -a "$OUT/log.txt"
  timeout ${LSP_TIMEOUT:-300} python3 benchmarks/lsp_latency.py --example "$LSP" --max-steps ${LSP_STEPS:-3} \
    --requests ${LSP_REQUESTS:-1500} --json > "$OUT/r_lsp_$LSP.json" 2>>"$OUT/log.txt"
  echo "rc=$? $(date +%T)" | tee -a "$OUT/log.txt"
fi
if [ -n "${SUITE:-}" ]; then
  echo "== gpu_suite $(date +%T)" | tee -a "$OUT/log.txt"
  timeout ${SUITE_TIMEOUT:-240} python3 benchmarks/gpu_suite.py >>"$OUT/log.txt" 2>&1
  echo "rc=$? $(date +%T)" | tee -a "$OUT/log.txt"
fi
# Fold the WAL into the database file: only plain files come back, and at most 8 of them.
if [ -f "$DB" ]; then
  python3 -c "import sqlite3, sys; sqlite3.connect(sys.argv[1]).execute('PRAGMA wal_checkpoint(TRUNCATE)')" "$DB"
  rm -f "$DB-wal" "$DB-shm"
fi
rm -f "$OUT"/.run-*.lock  # the engine's per-run locks: empty, and they would take return slots
# $OUT returns at most 8 files: fold the per-step outputs into one.
python3 - "$OUT" <<'PY'
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
merged = {}
for p in sorted(out.glob("r_*")):
    key = p.name.removeprefix("r_").removesuffix(".json")
    try:
        merged[key] = json.loads(p.read_text()) if p.suffix == ".json" else p.read_text()
    except Exception as exc:
        merged[key] = {"error": f"{exc}", "raw": p.read_text()[-2000:]}
    p.unlink()
(out / "results.json").write_text(json.dumps(merged, indent=1))
PY
