#!/usr/bin/env bash
# tandem gen topk / tandem topk: outputs, JSON, --explain, and exit code 2 with a clear message on bad input.
set -u
T=$1
source "$(dirname "$0")/lib.bash"
temp_dir d
expect_err() {  # expect_err NAME TEXT: the last command's stderr mentions TEXT
  grep -q -- "$2" "$err" || { echo "FAIL $1: stderr lacks '$2'"; cat "$err"; fails=$((fails+1)); }
}
check_apart gen 0 "$T" gen topk --objects 5000 --lists 3 --dist uniform --seed 7 --out "$d/u.tkl"
check_apart gen-again 0 "$T" gen topk --objects 5000 --lists 3 --dist uniform --seed 7 --out "$d/u2.tkl"
cmp -s "$d/u.tkl" "$d/u2.tkl" || { echo "FAIL gen not deterministic"; fails=$((fails+1)); }
[ "$(stat -c %s "$d/u.tkl")" = $((16 + 3 * 5000 * 8)) ] || { echo "FAIL gen size"; fails=$((fails+1)); }
for dist in correlated anticorrelated zipf; do
  check_apart "gen-$dist" 0 "$T" gen topk --objects 999 --lists 4 --dist $dist --out "$d/$dist.tkl"
done
check_apart gen-bad-dist 2 "$T" gen topk --objects 10 --dist normal --out "$d/x.tkl"
check_apart gen-bad-lists 2 "$T" gen topk --objects 10 --lists 65 --out "$d/x.tkl"
[ ! -e "$d/x.tkl" ] || { echo "FAIL half-written output"; fails=$((fails+1)); }

# Every algorithm gives the same answer (ids and exact scores).
for algo in nra ta scan auto; do
  check_apart "topk-$algo" 0 "$T" topk --lists "$d/u.tkl" --k 10 --algo $algo --device cpu --json
  cp "$out" "$d/$algo.json"
done
for algo in ta scan auto; do
  cmp -s "$d/nra.json" "$d/$algo.json" || { echo "FAIL $algo differs from nra"; fails=$((fails+1)); }
done
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["k"]==10 and len(d["results"])==10
r=d["results"]; assert all((a["score"],-a["id"])>=(b["score"],-b["id"]) for a,b in zip(r,r[1:]))' "$d/nra.json" \
  || { echo "FAIL json content"; fails=$((fails+1)); }
check_apart topk-stride100 0 "$T" topk --lists "$d/u.tkl" --k 10 --algo nra --stride 100 --threads 1 --device cpu --json
cmp -s "$out" "$d/nra.json" || { echo "FAIL stride 100 differs"; fails=$((fails+1)); }
check_apart topk-explain 0 "$T" topk --lists "$d/u.tkl" --k 5 --algo nra --device cpu --explain
grep -q "depth per list" "$out" && grep -q "NRA phase 2" "$out" || { echo "FAIL explain content"; fails=$((fails+1)); }
check_apart topk-auto-anti 0 "$T" topk --lists "$d/anticorrelated.tkl" --k 5 --device cpu --explain
grep -q "auto: scan" "$out" || { echo "FAIL auto on anticorrelated did not pick the scan"; fails=$((fails+1)); }
for agg in min max "wsum:1,2,0.5"; do
  check_apart "topk-agg-$agg" 0 "$T" topk --lists "$d/u.tkl" --k 4 --agg "$agg" --device cpu
done
check_apart topk-stdin 0 bash -c "cat '$d/u.tkl' | '$T' topk --lists - --k 2 --device cpu"

# Bad usage and bad input: exit 2, message naming the problem.
check_apart k-too-big 2 "$T" topk --lists "$d/u.tkl" --k 5001 --device cpu; expect_err k-too-big "between 1 and the number of objects"
check_apart k-zero 2 "$T" topk --lists "$d/u.tkl" --k 0 --device cpu
check_apart bad-agg 2 "$T" topk --lists "$d/u.tkl" --k 1 --agg avg
check_apart bad-wsum 2 "$T" topk --lists "$d/u.tkl" --k 1 --agg wsum:1,2
check_apart neg-wsum 2 "$T" topk --lists "$d/u.tkl" --k 1 --agg wsum:1,-2,1
check_apart bad-algo 2 "$T" topk --lists "$d/u.tkl" --k 1 --algo fa
check_apart bad-stride 2 "$T" topk --lists "$d/u.tkl" --k 1 --stride 0
check_apart missing-file 2 "$T" topk --lists "$d/none.tkl" --k 1
python3 - "$d" <<'PY'
import struct, sys
d = sys.argv[1]
def write(name, n, m, lists, magic=b"TKL1", extra=b""):
    with open(f"{d}/{name}", "wb") as f:
        f.write(magic + struct.pack("<IQ", n, m))
        for l in lists:
            for i, s in l:
                f.write(struct.pack("<If", i, s))
        f.write(extra)
write("unsorted.tkl", 2, 3, [[(0, .9), (1, .5), (2, .1)], [(0, .9), (1, .1), (2, .5)]])
write("range.tkl", 1, 3, [[(0, .9), (7, .5), (2, .1)]])
write("dup.tkl", 1, 3, [[(0, .9), (0, .5), (2, .1)]])
write("nan.tkl", 1, 2, [[(0, float("nan")), (1, .5)]])
write("magic.tkl", 1, 1, [[(0, .5)]], magic=b"TKL0")
write("trunc.tkl", 2, 3, [[(0, .9), (1, .5), (2, .1)], [(0, .9)]])
write("extra.tkl", 1, 1, [[(0, .5)]], extra=b"xx")
PY
check_apart unsorted 2 "$T" topk --lists "$d/unsorted.tkl" --k 1; expect_err unsorted "list 1, position 2: not sorted descending"
check_apart id-range 2 "$T" topk --lists "$d/range.tkl" --k 1; expect_err id-range "list 0, position 1: id 7 is out of range"
check_apart dup-id 2 "$T" topk --lists "$d/dup.tkl" --k 1; expect_err dup-id "list 0, position 1: id 0 is duplicated"
check_apart nan 2 "$T" topk --lists "$d/nan.tkl" --k 1; expect_err nan "list 0, position 0: score is NaN"
check_apart magic 2 "$T" topk --lists "$d/magic.tkl" --k 1; expect_err magic "not a TKL1 file"
check_apart truncated 2 "$T" topk --lists "$d/trunc.tkl" --k 1; expect_err truncated "truncated in list 1 at position 1"
check_apart extra 2 "$T" topk --lists "$d/extra.tkl" --k 1; expect_err extra "extra bytes"
check_apart demo-topk 0 "$T" demo --only top-k
[ $fails -eq 0 ]
