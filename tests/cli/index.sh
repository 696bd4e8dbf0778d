#!/usr/bin/env bash
# tandem index: listing, JSON (every entry checked against div/mod), bad input exits 2,
# --bench without a GPU exits 1 with a message, the demo part.
set -u
T=$1
source "$(dirname "$0")/lib.bash"
check basic 0 "$T" index --dims 5x70x10
grep -q "carry and div/mod agree" $out || { echo "FAIL basic: no agreement line"; fails=$((fails+1)); }
check packed 0 "$T" index --dims 33x31x1 --step 7 --show 5 --packed
grep -q "wx=6 wy=5 wz=0 (11 bits) -> 16-bit words" $out || { echo "FAIL packed: widths"; cat $out; fails=$((fails+1)); }
check explain 0 "$T" index --dims 32x64x1 --explain
grep -q "one warp per cycle" $out || { echo "FAIL explain: no cycle model"; fails=$((fails+1)); }
check one-element 0 "$T" index --dims 1x1x1 --show 3

# JSON: the exact list, each entry equal to div/mod, n = 0, C, 2C, ... below the product, at most K.
for args in "5x70x10 3 100" "7x3x2 5 1000" "1x1x1 1 4" "100x2x2 401 10" "9x9x9 1000 3"; do
  set -- $args
  "$T" index --dims "$1" --step "$2" --show "$3" --json >$out 2>&1 || { echo "FAIL json $args: exit"; fails=$((fails+1)); continue; }
  python3 - "$1" "$2" "$3" $out <<'PY' || { echo "FAIL json $args"; fails=$((fails+1)); }
import json, sys
dims, c, k, path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
dx, dy, dz = (int(v) for v in dims.split("x"))
rows = json.load(open(path))
assert isinstance(rows, list)
want = [n for n in range(0, dx * dy * dz, c)][:k]
assert [r["n"] for r in rows] == want, (rows, want)
bw = lambda d: (d - 1).bit_length()
wx, wy = bw(dx), bw(dy)
for r in rows:
    assert set(r) == {"n", "x", "y", "z", "packed"}, r
    n = r["n"]
    assert (r["x"], r["y"], r["z"]) == (n % dx, n // dx % dy, n // (dx * dy)), r
    assert r["packed"] == r["x"] | (r["y"] << wx) | (r["z"] << (wx + wy)), r
PY
done
echo "ok   json (5 shapes)"

check zero-dim 2 "$T" index --dims 0x5x5
grep -qi "at least 1" $out || { echo "FAIL zero-dim message"; fails=$((fails+1)); }
check malformed 2 "$T" index --dims 5xx5
grep -qi "malformed" $out || { echo "FAIL malformed message"; fails=$((fails+1)); }
check malformed-letters 2 "$T" index --dims abc
check too-many 2 "$T" index --dims 2x2x2x2
check over-2-32 2 "$T" index --dims 70000x70000x1
grep -q "2^32" $out || { echo "FAIL over-2-32 message"; fails=$((fails+1)); }
check zero-step 2 "$T" index --dims 5x5x5 --step 0
check no-dims 2 "$T" index
check negative-step 2 "$T" index --dims 5x5x5 --step -3

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  check bench-no-gpu 1 "$T" index --bench --quick
  grep -qi "needs a CUDA GPU" $out || { echo "FAIL bench-no-gpu message"; cat $out; fails=$((fails+1)); }
fi
check demo 0 "$T" demo --only "index generation"
grep -q "matches the reference" $out || { echo "FAIL demo output"; fails=$((fails+1)); }
[ $fails -eq 0 ]
