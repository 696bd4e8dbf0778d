#!/usr/bin/env bash
# tandem sort: the hybrid bitonic plan (--plan) and file sorting, with bad input giving exit 2 and
# no half-written output.
set -u
T=$1
source "$(dirname "$0")/lib.bash"
temp_dir D

# --- the plan of the 16-element example (k = 0.6) ----------------------------------------------
plan_concurrent() {  # prints the concurrent steps of a --plan --json run, comma separated
  "$T" sort --plan --json "$@" | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(",".join(str(s["step"]) for s in d["steps"] if s["mode"] == "concurrent"))'
}
[ "$(plan_concurrent --n 16 --k 0.6 --policy c)" = "1,2,3,4,5,6,8,9,10" ] || fail "plan c"
[ "$(plan_concurrent --n 16 --k 0.6 --policy b)" = "1,2,3,5,6,9,10" ] || fail "plan b"
[ "$(plan_concurrent --n 16 --k 0.6 --policy b --min-interior-run 3)" = "1,2,3,9,10" ] || fail "plan b rule"
[ "$(plan_concurrent --n 16 --k 0.6 --policy a)" = "1,3,6,10" ] || fail "plan a"
[ "$(plan_concurrent --n 16 --k 0.6 --policy a --min-interior-run 3)" = "1,10" ] || fail "plan a rule"
"$T" sort --plan --json --n 16 --k 0.6 --policy c | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["n"] == 16 and d["N"] == 1 and d["policy"] == "c", d
assert d["cpu_elements"] == 8 and d["gpu_elements"] == 8, d
assert abs(d["k"] - 0.6) < 1e-12
s7 = d["steps"][6]
assert s7 == {"step": 7, "subset": 4, "stride": 8, "mode": "gpu"}, s7
' || fail "plan json fields"
check plan-text 0 "$T" sort --plan --n 16 --k 0.6 --policy c
grep -q "1-6, 8-10" "$out" || fail "plan text shows 1-6, 8-10"
check plan-no-k 2 "$T" sort --plan --n 16
check plan-bad-policy 2 "$T" sort --plan --n 16 --k 0.6 --policy d
check plan-negative-k 2 "$T" sort --plan --n 16 --k -1

# --- sorting files -------------------------------------------------------------------------------
python3 - "$D" <<'EOF'
import random, struct, sys
d = sys.argv[1]
random.seed(3)
n = 5003
keys = [random.randrange(0, 1000) for _ in range(n)]
open(f"{d}/k.u32", "wb").write(struct.pack(f"<{n}I", *keys))
open(f"{d}/v.u32", "wb").write(struct.pack(f"<{n}I", *range(n)))
fl = [random.uniform(-5, 5) for _ in range(n - 6)] + [float("nan"), -0.0, 0.0, float("-inf"), float("inf"), -float("nan")]
open(f"{d}/k.f64", "wb").write(struct.pack(f"<{n}d", *fl))
open(f"{d}/bad.u32", "wb").write(b"\x01\x02\x03\x04\x05")  # 5 bytes: not a multiple of 4
# a .npy of int64
hdr = "{'descr': '<i8', 'fortran_order': False, 'shape': (%d,), }" % n
hdr = hdr + " " * (63 - (len(hdr) + 10) % 64) + "\n"
ints = [random.randrange(-2**40, 2**40) for _ in range(n)]
open(f"{d}/k.npy", "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode() + struct.pack(f"<{n}q", *ints))
EOF
for dev in cpu auto hybrid; do
  check "sort-u32-$dev" 0 "$T" sort --type u32 --in "$D/k.u32" --out "$D/s.u32" --algorithm bitonic --device $dev
  python3 -c '
import struct, sys
a = open(sys.argv[1], "rb").read(); b = open(sys.argv[2], "rb").read()
x = struct.unpack(f"<{len(a)//4}I", a); y = struct.unpack(f"<{len(b)//4}I", b)
assert list(y) == sorted(x)' "$D/k.u32" "$D/s.u32" || fail "sorted u32 ($dev)"
done
check sort-pairs-desc 0 "$T" sort --type u32 --in "$D/k.u32" --out "$D/s.u32" --values "$D/v.u32" --values-out "$D/sv.u32" --descending --algorithm bitonic --explain
grep -q "plan:" "$out" || fail "--explain prints the plan"
python3 -c '
import struct, sys
k = struct.unpack("<5003I", open(sys.argv[1], "rb").read())
sk = struct.unpack("<5003I", open(sys.argv[2], "rb").read())
sv = struct.unpack("<5003I", open(sys.argv[3], "rb").read())
want = sorted(range(5003), key=lambda i: -k[i])  # stable: equal keys keep input order
assert list(sv) == want and list(sk) == [k[i] for i in want]' "$D/k.u32" "$D/s.u32" "$D/sv.u32" || fail "stable descending pairs"
check sort-f64 0 "$T" sort --type f64 --in "$D/k.f64" --out "$D/s.f64" --algorithm bitonic
python3 -c '
import struct, sys, math
y = struct.unpack("<5003d", open(sys.argv[1], "rb").read())
assert math.isnan(y[0]) and math.copysign(1, y[0]) < 0, y[0]       # -NaN first
assert math.isnan(y[-1]) and math.copysign(1, y[-1]) > 0, y[-1]    # +NaN last
assert y[1] == float("-inf") and y[-2] == float("inf")
z = [i for i, v in enumerate(y) if v == 0.0]
assert math.copysign(1, y[z[0]]) < 0 and math.copysign(1, y[z[1]]) > 0
mid = y[1:-1]
assert all(mid[i] <= mid[i+1] for i in range(len(mid)-1))' "$D/s.f64" || fail "f64 total order"
check sort-npy 0 "$T" sort --type i64 --in "$D/k.npy" --out "$D/s.npy" --algorithm bitonic
python3 -c '
import struct, sys
def load(p):
    b = open(p, "rb").read(); hl = struct.unpack("<H", b[8:10])[0]; body = b[10+hl:]
    return struct.unpack(f"<{len(body)//8}q", body)
assert list(load(sys.argv[2])) == sorted(load(sys.argv[1]))' "$D/k.npy" "$D/s.npy" || fail "npy i64 sorted"
: > "$D/empty.u32"
check sort-empty 0 "$T" sort --type u32 --in "$D/empty.u32" --out "$D/s-empty.u32" --algorithm bitonic
[ -f "$D/s-empty.u32" ] && [ ! -s "$D/s-empty.u32" ] || fail "empty output exists and is empty"
printf '\x07\x00\x00\x00' > "$D/one.u32"
check sort-one 0 "$T" sort --type u32 --in "$D/one.u32" --out "$D/s-one.u32" --algorithm bitonic
cmp -s "$D/one.u32" "$D/s-one.u32" || fail "one element unchanged"

# --- the non-bitonic paths: radix / merge on the CPU, auto (GPU pipeline or out of core where a GPU is present)
for alg in radix merge auto; do
  check "pairs-$alg" 0 "$T" sort --type u32 --in "$D/k.u32" --out "$D/s.u32" --values "$D/v.u32" --values-out "$D/sv.u32" --descending --algorithm $alg --explain
  grep -q "path " "$out" || fail "--explain names the path ($alg)"
  python3 -c '
import struct, sys
k = struct.unpack("<5003I", open(sys.argv[1], "rb").read())
sk = struct.unpack("<5003I", open(sys.argv[2], "rb").read())
sv = struct.unpack("<5003I", open(sys.argv[3], "rb").read())
want = sorted(range(5003), key=lambda i: -k[i])
assert list(sv) == want and list(sk) == [k[i] for i in want]' "$D/k.u32" "$D/s.u32" "$D/sv.u32" || fail "stable descending pairs ($alg)"
done
check radix-cpu-explain 0 "$T" sort --type f64 --in "$D/k.f64" --out "$D/s2.f64" --algorithm radix --device cpu --explain
grep -q "path cpu-radix" "$out" || fail "--device cpu --explain says path cpu-radix"
grep -q "CPU radix sort" "$out" || fail "--explain shows the CPU radix stage"
cmp -s "$D/s.f64" "$D/s2.f64" || fail "radix f64 equals the bitonic result"
check in-place-explain 0 "$T" sort --type f64 --in "$D/k.f64" --out "$D/s3.f64" --memory low --device cpu --explain
grep -q "path cpu-in-place: device=cpu; memory=low" "$out" || fail "--memory low --explain says path cpu-in-place"
grep -q "CPU in-place radix sort" "$out" || fail "--explain shows the in-place stage"
cmp -s "$D/s.f64" "$D/s3.f64" || fail "in-place f64 equals the bitonic result"
check in-place-pairs-explain 0 "$T" sort --type u32 --in "$D/k.u32" --out "$D/s4.u32" --values "$D/v.u32" --values-out "$D/sv4.u32" --descending --memory low --device cpu --explain
grep -q "CPU in-place stable pair sort" "$out" || fail "--memory low with values: the in-place pair sort"
cmp -s "$D/s4.u32" "$D/s.u32" && cmp -s "$D/sv4.u32" "$D/sv.u32" || fail "--memory low pairs equal the radix sort's (stable)"
# A regular file, like standard input, is read into memory (never mapped: a file truncated by
# another process cannot raise SIGBUS) and sorted where it was read; a file sorted onto itself is
# read whole before the result replaces it.
grep -q "mapped; the sort reads the pages" "$out" && fail "--memory low reads its input into memory"
check read-explain 0 "$T" sort --type f64 --in "$D/k.f64" --out "$D/s5.f64" --device cpu --explain
grep -q "read into memory" "$out" || fail "--explain says a regular file's input is read into memory"
cmp -s "$D/s.f64" "$D/s5.f64" || fail "the sort of a read f64 file equals the bitonic result"
"$T" sort --type f64 --in - --out "$D/s6.f64" --device cpu --explain <"$D/k.f64" >"$out" 2>&1 || fail "sort from standard input"
grep -q "read into memory" "$out" || fail "--explain says standard input is read into memory"
cmp -s "$D/s.f64" "$D/s6.f64" || fail "the sort of standard input equals the bitonic result"
cp "$D/k.u32" "$D/self.u32"; cp "$D/v.u32" "$D/self-v.u32"
check sort-onto-itself 0 "$T" sort --type u32 --in "$D/self.u32" --out "$D/self.u32" --values "$D/self-v.u32" --values-out "$D/self-v.u32" --descending --device cpu
cmp -s "$D/self.u32" "$D/s.u32" && cmp -s "$D/self-v.u32" "$D/sv.u32" || fail "pairs sorted onto their own files"
check bad-memory 2 "$T" sort --type f64 --in "$D/k.f64" --out "$D/x9.f64" --memory tiny
[ -e "$D/x9.f64" ] && fail "--memory tiny left an output file"
check gpus-without-bitonic 2 "$T" sort --type f64 --in "$D/k.f64" --out "$D/x10.f64" --gpus 0,1
grep -q "only the bitonic sort of one process (--algorithm bitonic or --device hybrid) runs on several GPUs" \
  "$out" || fail "--gpus outside the bitonic sort names what runs on several GPUs"
[ -e "$D/x10.f64" ] && fail "--gpus outside the bitonic sort left an output file"
# Everywhere else --gpus would be ignored: refused, naming the option that makes it useless.
check gpus-bitonic-cpu 2 "$T" sort --type f64 --in "$D/k.f64" --out "$D/x11.f64" --algorithm bitonic --device cpu --gpus 0
grep -q -- "--gpus has no effect with --device cpu" "$out" || fail "--gpus with --device cpu names the reason"
[ -e "$D/x11.f64" ] && fail "--gpus with --device cpu left an output file"
check gpus-plan 2 "$T" sort --plan --n 16 --k 0.6 --gpus 0
grep -q -- "--gpus has no effect with --plan" "$out" || fail "--gpus with --plan names the reason"
check gpus-distributed 2 "$T" sort --type f64 --in "$D/k.f64" --out "$D/x12.f64" --algorithm bitonic --distributed --gpus 0
grep -q -- "--gpus has no effect with --distributed" "$out" || fail "--gpus with --distributed names the reason"
[ -e "$D/x12.f64" ] && fail "--gpus with --distributed left an output file"
# The bitonic sort takes --gpus (0,0: two shares of GPU 0); without a GPU it says the list went unused.
gpu=$("$T" info --json | python3 -c 'import json,sys; print(1 if json.load(sys.stdin)["gpus"] else 0)')
check gpus-bitonic 0 "$T" sort --type f64 --in "$D/k.f64" --out "$D/x13.f64" --algorithm bitonic --gpus 0,0
cmp -s "$D/s.f64" "$D/x13.f64" || fail "bitonic --gpus 0,0 sorts like the other paths"
if [ "$gpu" = 0 ]; then
  grep -q "gpus = 0,0 not used: the CPU sorts alone" "$out" || fail "--gpus without a GPU says the list went unused"
fi
"$T" sort --help | grep -q "cpu-in-place (--memory low)  *<= 1.07x" || fail "sort --help gives the peak memory per path"
# Larger than a forced GPU memory limit: out of core on a GPU machine (host partition + GPU pieces),
# the CPU radix sort elsewhere; the result is the same either way.
python3 - "$D" <<'EOF'
import os, sys
d = sys.argv[1]
n = (1 << 21) + 3
b = bytearray(os.urandom(8 * n))
for i in range(0, len(b), 8 * 4099):  # a few runs of equal keys
    b[i:i + 8 * 64] = bytes(8 * 64)
open(f"{d}/big.u64", "wb").write(b)
EOF
check out-of-core 0 "$T" sort --type u64 --in "$D/big.u64" --out "$D/sbig.u64" --gpu-memory-limit 70000000 --explain
grep -q "path " "$out" || fail "--explain names the path (out of core)"
python3 -c '
import struct, sys
a = open(sys.argv[1], "rb").read(); b = open(sys.argv[2], "rb").read()
x = struct.unpack(f"<{len(a)//8}Q", a); y = struct.unpack(f"<{len(b)//8}Q", b)
assert list(y) == sorted(x)' "$D/big.u64" "$D/sbig.u64" || fail "out-of-core u64 sorted"
# Within a host memory limit: sorted runs in --temp-dir merged into the same bytes; the folder is
# left empty; a limit too small to merge is refused (exit 2, naming the least limit, no output).
mkdir -p "$D/runs"
check by-runs 0 "$T" sort --type u64 --in "$D/big.u64" --out "$D/rbig.u64" --memory-limit 4M --temp-dir "$D/runs" --explain
grep -q "sorted runs merged in one pass" "$out" || fail "--memory-limit says it sorted by runs"
cmp -s "$D/sbig.u64" "$D/rbig.u64" || fail "by runs sorts like the in-memory path"
[ -z "$(ls -A "$D/runs")" ] || fail "by runs left its scratch folder"
check by-runs-too-small 2 "$T" sort --type u64 --in "$D/big.u64" --out "$D/r2.u64" --memory-limit 64K --temp-dir "$D/runs"
grep -q "at least" "$out" || fail "a too small --memory-limit names the least that works"
[ -e "$D/r2.u64" ] && fail "a refused --memory-limit left an output file"
check by-runs-stdin 2 "$T" sort --type u64 --in - --out "$D/r3.u64" --memory-limit 4M < "$D/big.u64"
check plan-memory-limit 2 "$T" sort --plan --n 16 --k 0.5 --memory-limit 4M
# A signal once the runs are written (the values output a FIFO nobody reads: the merge blocks
# opening it) removes the runs' folder and the keys' temporary.
mkfifo "$D/runs.fifo"
for sig in TERM INT; do
  python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])' \
    "$T" sort --type u64 --in "$D/big.u64" --values "$D/big.u64" --values-type u64 --out "$D/rsig.u64" \
    --values-out "$D/runs.fifo" --memory-limit 4M --temp-dir "$D/runs" 2>/dev/null &
  pid=$!
  for _ in $(seq 200); do ls "$D" | grep -q 'rsig.u64.tmp-' && break; sleep 0.05; done
  ls "$D" | grep -q 'rsig.u64.tmp-' || fail "by runs, SIG$sig: the keys' temporary never appeared"
  [ -n "$(ls -A "$D/runs")" ] || fail "by runs, SIG$sig: no runs folder while merging"
  kill -$sig $pid
  wait $pid 2>/dev/null
  [ -z "$(ls -A "$D/runs")" ] || fail "by runs, SIG$sig: the runs' folder was left behind"
  ls "$D" | grep -q 'rsig.u64' && fail "by runs, SIG$sig: an output or its temporary was left behind"
done

# --- bad input: exit 2, nothing written ----------------------------------------------------------
check bad-size 2 "$T" sort --type u32 --in "$D/bad.u32" --out "$D/x1.u32" --algorithm bitonic
[ -e "$D/x1.u32" ] && fail "bad-size left an output file"
check npy-type-mismatch 2 "$T" sort --type u32 --in "$D/k.npy" --out "$D/x2.npy" --algorithm bitonic
[ -e "$D/x2.npy" ] && fail "type mismatch left an output file"
check unknown-type 2 "$T" sort --type u128 --in "$D/k.u32" --out "$D/x3.u32"
check unsupported-type 2 "$T" sort --type u8 --in "$D/k.u32" --out "$D/x3.u32"
check missing-input 2 "$T" sort --type u32 --in "$D/nope.u32" --out "$D/x4.u32"
[ -e "$D/x4.u32" ] && fail "missing input left an output file"
check unwritable-output 2 "$T" sort --type u32 --in "$D/k.u32" --out "$D/no/such/dir/x.u32" --algorithm bitonic
check values-count-mismatch 2 "$T" sort --type u32 --in "$D/k.u32" --out "$D/x5.u32" --values "$D/one.u32" --values-out "$D/x5v.u32" --algorithm bitonic
[ -e "$D/x5.u32" ] || [ -e "$D/x5v.u32" ] && fail "values mismatch left an output file"
check values-without-out 2 "$T" sort --type u32 --in "$D/k.u32" --out "$D/x6.u32" --values "$D/v.u32"
check bad-device 2 "$T" sort --type u32 --in "$D/k.u32" --out "$D/x7.u32" --device tpu
check bad-algorithm 2 "$T" sort --type u32 --in "$D/k.u32" --out "$D/x7.u32" --algorithm quick
check bad-policy 2 "$T" sort --type u32 --in "$D/k.u32" --out "$D/x7.u32" --policy z
check no-type 2 "$T" sort --in "$D/k.u32" --out "$D/x8.u32"
check bad-tune-signal 2 "$T" sort --type u32 --in "$D/k.u32" --out "$D/x7.u32" --algorithm bitonic --tune-signal ipc
grep -q -- "--tune-signal" "$out" || fail "a bad --tune-signal names the option"
[ -e "$D/x7.u32" ] && fail "bad options left an output file"

# The GPU launch shape tuned by hardware counters (a fresh tuning cache, so that it is measured):
# every candidate's time and counters with both picks and the tuning cost, or, where counters
# cannot be read, the reason once and time deciding.
if "$T" info --json | python3 -c 'import json,sys; sys.exit(0 if json.load(sys.stdin)["gpus"] else 1)'; then
  check tune-counters 0 env XDG_CACHE_HOME="$D/cache" "$T" sort --type u32 --in "$D/k.u32" --out "$D/s.u32" \
    --algorithm bitonic --device gpu --tune-signal counters --explain
  if grep -q "hardware counters could not be read" "$out"; then
    grep -q "GPU tuning:" "$out" && ! grep -q "by time" "$out" && fail "counter fallback: tuned by time"
  else
    grep -q "by hardware counters" "$out" || fail "--tune-signal counters: no counter table"
    grep -q "<- counters" "$out" || fail "--tune-signal counters: no counter pick"
    grep -q "tuning cost: counter reading" "$out" || fail "--tune-signal counters: no tuning cost"
  fi
  python3 -c '
import struct, sys
a = open(sys.argv[1], "rb").read(); b = open(sys.argv[2], "rb").read()
x = struct.unpack(f"<{len(a)//4}I", a); y = struct.unpack(f"<{len(b)//4}I", b)
assert list(y) == sorted(x)' "$D/k.u32" "$D/s.u32" || fail "sorted u32 (tuned by counters)"
fi

exit $((fails > 0))
