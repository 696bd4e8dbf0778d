#!/usr/bin/env bash
# Sums the same on every path: group-by i64 sums beyond i64 are bad input (exit 2 naming the
# values file, no output file) while a running sum that leaves i64 and returns is exact; top-k sums that cancel
# across magnitudes (1e20, 1, -1e20) give one answer on every algorithm and thread count.
set -u
T=$1
source "$(dirname "$0")/lib.bash"  # check NAME CODE CMD... (output in $out), $fails
temp_dir D

python3 - "$D" <<'PY'
import struct, sys
d = sys.argv[1]
def i64(name, xs): open(f"{d}/{name}", "wb").write(struct.pack(f"<{len(xs)}q", *xs))
top = 2**63 - 1
i64("k-over", [7, 7, 3]); i64("v-over", [top, 1, 5])
i64("k-under", [-9, -9]); i64("v-under", [-2**63, -1])
i64("k-back", [7, 7, 7]); i64("v-back", [top, 1, -1])
# TKL1: objects 0..4 over 3 lists; object 0 scores (1e20, 1, -1e20) = 1 exactly
scores = [(1e20, 1.0, -1e20), (0.25, 0.25, 0.25), (0.0, 0.5, 0.0), (-1e20, 0.0, 1e20), (1e20, -1e20, 0.125)]
out = b"TKL1" + struct.pack("<IQ", 3, len(scores))
for i in range(3):
    lst = sorted(range(len(scores)), key=lambda o: (-struct.unpack("<f", struct.pack("<f", scores[o][i]))[0], o))
    out += b"".join(struct.pack("<If", o, scores[o][i]) for o in lst)
open(f"{d}/cancel.tkl", "wb").write(out)
PY

for dev in cpu auto; do
  check "groupby-over-$dev" 2 "$T" groupby --keys "$D/k-over" --key-type i64 --values "$D/v-over" --value-type i64 \
    --agg sum,count --device $dev --out "$D/over.csv"
  grep -q "v-over: sum: the sum of column 'value' does not fit i64" "$out" \
    || fail "over ($dev): message names the file: $(cat "$out")"
  [ ! -e "$D/over.csv" ] || fail "over ($dev): no output file"
  check "groupby-under-$dev" 2 "$T" groupby --keys "$D/k-under" --key-type i64 --values "$D/v-under" --value-type i64 \
    --agg sum --device $dev
  grep -q "v-under: sum: the sum of column 'value' does not fit i64" "$out" || fail "under ($dev): $(cat "$out")"
  check "groupby-back-$dev" 0 "$T" groupby --keys "$D/k-back" --key-type i64 --values "$D/v-back" --value-type i64 \
    --agg sum,count --device $dev
  [ "$(cat "$out")" = "$(printf 'key,sum,count\n7,9223372036854775807,3')" ] || fail "back ($dev): $(cat "$out")"
done

first=""
for algo in nra ta scan auto; do
  for threads in 1 2 3 8; do
    check "topk-$algo-$threads" 0 "$T" topk --lists "$D/cancel.tkl" --k 5 --algo $algo --threads $threads --json
    [ -z "$first" ] && first=$(cat "$out")
    [ "$(cat "$out")" = "$first" ] || fail "topk $algo on $threads threads differs: $(cat "$out") vs $first"
  done
done
python3 -c '
import json, sys
r = json.loads(sys.argv[1])["results"]
assert [(x["id"], x["score"]) for x in r] == [(0, 1.0), (1, 0.75), (2, 0.5), (4, 0.125), (3, 0.0)], r' "$first" \
  || fail "top 5 of the cancelling lists: $first"
[ $fails -eq 0 ]
