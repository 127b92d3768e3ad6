#!/usr/bin/env bash
# The H200 run behind docs/results.md: eval the bundled examples, then evolve some, all measured.
# Usage on the device machine (repo root, .whl carried): [EVAL="a b"] [EVOLVE="c"] [STEPS=N] bash benchmarks/gpu_run.sh
# EVAL defaults to all six examples, EVOLVE to none; EVAL= (empty) evaluates none.
set -u
OUT=${OUT:-./gpu-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
python3 -m pip install -q --no-index --no-deps --no-build-isolation --no-compile --target /tmp/site . >/dev/null 2>&1 || exit 1
export PYTHONPATH=/tmp/site
KE="python3 -m kernelevolve.server.cli"
DB="$OUT/history.db"
EVAL=${EVAL-"rmsnorm gemm_epilogue embedding_bag softmax fused_elementwise fm_interaction"}
EVOLVE=${EVOLVE-""}
STEPS=${STEPS:-10}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee -a "$OUT/log.txt"
for ex in $EVAL; do
  echo "== eval $ex $(date +%T)" | tee -a "$OUT/log.txt"
  timeout ${EVAL_TIMEOUT:-240} $KE eval examples/$ex/problem.py examples/$ex/candidate.py --json --db "$DB" \
    > "$OUT/eval_$ex.json" 2>>"$OUT/log.txt"
  echo "rc=$?" | tee -a "$OUT/log.txt"
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print({k: d.get(k) for k in ('verdict','stage','reason','timing','speedup','speedup_vs_eager','speedup_vs_compile','roofline_fraction')})" "$OUT/eval_$ex.json" 2>&1 | tee -a "$OUT/log.txt"
done
for ex in $EVOLVE; do
  echo "== evolve $ex $(date +%T)" | tee -a "$OUT/log.txt"
  timeout ${EVOLVE_TIMEOUT:-300} $KE evolve examples/$ex/problem.py --seed examples/$ex/candidate.py --max-steps $STEPS \
    --json --db "$DB" > "$OUT/evolve_$ex.json" 2>>"$OUT/log.txt"
  echo "rc=$?" | tee -a "$OUT/log.txt"
  tail -c 1500 "$OUT/evolve_$ex.json" | tee -a "$OUT/log.txt"; echo
done
# Fold the WAL into the database file: only plain files come back, and at most 8 of them.
python3 -c "import sqlite3, sys; sqlite3.connect(sys.argv[1]).execute('PRAGMA wal_checkpoint(TRUNCATE)')" "$DB"
rm -f "$DB-wal" "$DB-shm"
# $OUT returns at most 8 files: fold the per-example JSON into one.
python3 - "$OUT" <<'PY'
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
merged = {}
for p in sorted(out.glob("e*_*.json")):
    try:
        merged[p.stem] = json.loads(p.read_text())
    except Exception as exc:
        merged[p.stem] = {"error": f"{exc}", "raw": p.read_text()[-2000:]}
    p.unlink()
(out / "results.json").write_text(json.dumps(merged, indent=1))
PY
