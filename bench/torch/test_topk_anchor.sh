#!/usr/bin/env bash
# The PyTorch anchor's plumbing on the CPU (torch's own run needs the GPU box): the script reads
# TKL1 lists and checks answers with numpy, reporting a wrong id, a wrong score and a bad file;
# bench_topk writes the lists and its answers, runs the script and fails when it fails.
#   test_topk_anchor.sh BENCH_TOPK TANDEM PYTHON
set -u
bench=$1 T=$2 py=$3
script=$(dirname "$0")/topk_anchor.py
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fails=0
check() {  # check NAME EXPECTED_CODE CMD...
  local name=$1 want=$2; shift 2
  "$@" >"$d/out" 2>&1
  local got=$?
  if [ "$got" != "$want" ]; then
    echo "FAIL $name: exit $got, expected $want"; tail -20 "$d/out"; fails=$((fails+1))
  else
    echo "ok   $name"
  fi
}
has() {  # has NAME TEXT: the last command's output contains TEXT
  grep -qF -- "$2" "$d/out" || { echo "FAIL $1: output lacks '$2'"; tail -20 "$d/out"; fails=$((fails+1)); }
}

check compiles 0 "$py" -c 'import sys; compile(open(sys.argv[1]).read(), sys.argv[1], "exec")' "$script"
check gen 0 "$T" gen topk --objects 3000 --lists 4 --dist uniform --seed 3 --out "$d/u.tkl"
check topk-sum 0 "$T" topk --lists "$d/u.tkl" --k 20 --device cpu --json
cp "$d/out" "$d/sum.json"
check topk-wsum 0 "$T" topk --lists "$d/u.tkl" --k 20 --agg wsum:0.5,1,0.25,0.0625 --device cpu --json
cp "$d/out" "$d/wsum.json"
# job.py OUT [tamper]: a job over u.tkl from tandem's answers; tamper changes one of them.
cat >"$d/job.py" <<'PY'
import json, sys
d = sys.argv[1].rsplit("/", 1)[0]
pairs = lambda f: [[r["id"], r["score"]] for r in json.load(open(f"{d}/{f}"))["results"]]
s, w = pairs("sum.json"), pairs("wsum.json")
tamper = sys.argv[2] if len(sys.argv) > 2 else ""
if tamper == "id":
    s[0][0] = s[-1][0] + 1 if s[-1][0] + 1 not in [i for i, _ in s] else s[-1][0] + 2
if tamper == "score":
    w[5][1] += 1e-3
json.dump({"lists": f"{d}/u.tkl", "k": 20, "reps": 1, "warmup": 0, "expect": s,
           "batch": {"weights": [[1, 1, 1, 1], [0.5, 1, 0.25, 0.0625]], "expect": {"1": w}}},
          open(sys.argv[1], "w"))
PY
"$py" "$d/job.py" "$d/good.json" && "$py" "$d/job.py" "$d/id.json" id && "$py" "$d/job.py" "$d/score.json" score
check anchor-agrees 0 "$py" "$script" "$d/good.json" --backend numpy
has anchor-agrees '"ok": true'
has anchor-agrees '"checked_queries": [1]'
check anchor-wrong-id 1 "$py" "$script" "$d/id.json" --backend numpy
has anchor-wrong-id 'scatter_topk: id'
check anchor-wrong-score 1 "$py" "$script" "$d/score.json" --backend numpy
has anchor-wrong-score 'batch_matmul query 1: rank 5'
head -c 1000 "$d/u.tkl" >"$d/short.tkl"
sed "s#$d/u.tkl#$d/short.tkl#" "$d/good.json" >"$d/short.json"
check anchor-short-file 2 "$py" "$script" "$d/short.json" --backend numpy
has anchor-short-file "short.tkl: 1000 bytes, expected 96016 for 4 lists of 3000 entries"
# Ties: every object scores the same, any k ids are a right answer.
"$py" - "$d" <<'PY'
import json, struct, sys
d = sys.argv[1]
with open(f"{d}/ties.tkl", "wb") as f:
    f.write(b"TKL1" + struct.pack("<IQ", 2, 50))
    for i in range(2):
        for o in range(50):
            f.write(struct.pack("<If", (o * 7 + i) % 50, 0.5))
json.dump({"lists": f"{d}/ties.tkl", "k": 5, "reps": 1, "warmup": 0,
           "expect": [[40 + o, 1.0] for o in range(5)]}, open(f"{d}/ties.json", "w"))
PY
check anchor-ties 0 "$py" "$script" "$d/ties.json" --backend numpy

# bench_topk end to end: its answers through the script; a broken script fails the run.
opts=(--quick --reps 1 --warmup 0 --max-m 20000 --queries 4 --anchor-dir "$d" --python "$py")
check bench-numpy 0 "$bench" "${opts[@]}" --anchor-backend numpy
has bench-numpy "numpy scatter (index_add_) + topk"
has bench-numpy "numpy [m,n]@[n,Q] + topk dim 0"
[ -z "$(ls "$d" | grep tandem-topk-anchor)" ] || { echo "FAIL bench left its files"; fails=$((fails+1)); }
check bench-no-anchor 0 "$bench" "${opts[@]}" --no-torch-anchor
has bench-no-anchor "torch anchor: skipped (--no-torch-anchor)"
printf 'import sys\nsys.exit(3)\n' >"$d/broken.py"
check bench-broken-anchor 1 "$bench" "${opts[@]}" --anchor-backend numpy --torch-anchor "$d/broken.py"
has bench-broken-anchor "torch anchor:"
[ $fails -eq 0 ] && echo "all passed" || { echo "$fails failed"; exit 1; }
