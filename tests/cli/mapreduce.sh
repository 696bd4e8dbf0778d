#!/usr/bin/env bash
# wordcount / groupby / gen zipf / gen text: outputs, formats and exit codes.
set -u
T=$1
source "$(dirname "$0")/lib.bash"
temp_dir d
printf 'the cat and The dog; the end\n' >"$d/a.txt"
check_apart wc 0 "$T" wordcount "$d/a.txt" --device cpu
same wc-out "$out" "$(printf 'the\t2\nThe\t1\nand\t1\ncat\t1\ndog\t1\nend\t1')"
check_apart wc-lower 0 "$T" wordcount "$d/a.txt" --lowercase --top 1 --device cpu
same wc-lower-out "$out" "$(printf 'the\t3')"
printf 'dog dog' | "$T" wordcount - "$d/a.txt" --lowercase --device cpu --out "$d/wc.tsv" 2>/dev/null
same wc-stdin-two-files "$d/wc.tsv" "$(printf 'dog\t3\nthe\t3\nand\t1\ncat\t1\nend\t1')"
check_apart wc-explain 0 "$T" wordcount "$d/a.txt" --explain
grep -q "wordcount" "$err" || { echo "FAIL wc-explain text"; fails=$((fails+1)); }
check_apart wc-missing 2 "$T" wordcount "$d/none.txt"
check_apart wc-bad-device 2 "$T" wordcount "$d/a.txt" --device tpu
[ -e "$d/never.tsv" ] && { echo "FAIL partial output"; fails=$((fails+1)); }
check_apart wc-missing-no-output 2 "$T" wordcount "$d/none.txt" --out "$d/never.tsv"
[ -e "$d/never.tsv" ] && { echo "FAIL output written on error"; fails=$((fails+1)); }
head -c 3000 /dev/urandom >"$d/bin"
check_apart wc-binary 0 "$T" wordcount "$d/bin" --device cpu
printf '' >"$d/empty.txt"
check_apart wc-empty 0 "$T" wordcount "$d/empty.txt"
same wc-empty-out "$out" ""

python3 - "$d" <<'PY'
import struct, sys
d = sys.argv[1]
open(d + "/k.u32", "wb").write(struct.pack("<6I", 5, 1, 5, 2, 1, 5))
open(d + "/v.f64", "wb").write(struct.pack("<6d", 1.5, 2, 2.5, -1, 4, 0))
open(d + "/v5.f64", "wb").write(struct.pack("<5d", 1, 2, 3, 4, 5))
open(d + "/k.i32", "wb").write(struct.pack("<7i", -5, 3, -5, 3, 0, -5, -2147483648))
open(d + "/v.f32", "wb").write(struct.pack("<7f", 0.1, float("nan"), -0.0, 2.5, -0.0, 0.0, float("inf")))
def npy(name, descr, fmt, values):  # a .npy file, version 1.0
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%d,), }" % (descr, len(values))
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    with open(d + "/" + name, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%d%s" % (len(values), fmt), *values))
npy("k64.npy", "<i8", "q", [-(2**63), 2**63 - 1, 0, -1, -1, 0])
PY
check_apart gb 0 "$T" groupby --keys "$d/k.u32" --key-type u32 --values "$d/v.f64" --value-type f64 --agg sum,count,min,max,mean --device cpu
same gb-out "$out" "$(printf 'key,sum,count,min,max,mean\n1,6,2,2,4,3\n2,-1,1,-1,-1,-1\n5,4,3,0,2.5,1.3333333333333333')"
check_apart gb-count-only 0 "$T" groupby --keys "$d/k.u32" --agg count --out "$d/c.csv"
same gb-count-out "$d/c.csv" "$(printf 'key,count\n1,2\n2,1\n5,3')"
# f32 values: sums and means in f64, min and max as f32; -0 kept; NaN propagated by sum and mean,
# skipped by min and max; i32 keys in numeric order.
check_apart gb-f32-signed 0 "$T" groupby --keys "$d/k.i32" --key-type i32 --values "$d/v.f32" --value-type f32 \
  --agg sum,count,min,max,mean --device cpu
same gb-f32-signed-out "$out" "$(printf 'key,sum,count,min,max,mean\n-2147483648,inf,1,inf,inf,inf
-5,0.10000000149011612,3,-0,0.1,0.033333333830038704\n0,-0,1,-0,-0,-0\n3,nan,2,2.5,2.5,nan')"
# A .npy file's type comes from its header, as with --column; f32 keys are a column type too.
check_apart gb-npy-type 0 "$T" groupby --keys "$d/k64.npy" --agg count
same gb-npy-type-out "$out" "$(printf 'key,count\n-9223372036854775808,1\n-1,2\n0,2\n9223372036854775807,1')"
check_apart gb-f32-keys 0 "$T" groupby --keys "$d/v.f32" --key-type f32 --agg count
same gb-f32-keys-out "$out" "$(printf 'key,count\n0,3\n0.1,1\n2.5,1\ninf,1\nnan,1')"
check_apart gb-explain-engine 0 "$T" groupby --keys "$d/k.u32" --agg count --explain --device cpu
grep -q "CPU engine" "$err" || { echo "FAIL gb-explain-engine: --explain names the engine"; cat "$err"; fails=$((fails+1)); }
check_apart gb-npy-out-folder 0 "$T" groupby --keys "$d/k.u32" --values "$d/v.f64" --out "$d/folder/"
[ -e "$d/folder/sum.npy" ] && [ -e "$d/folder/count.npy" ] || { echo "FAIL gb-npy-out-folder"; fails=$((fails+1)); }
# --engine chose among the GPU engines of an entry the table group-by replaced: it picks its engine.
check_apart gb-engine-gone 2 "$T" groupby --keys "$d/k.u32" --agg count --engine hash
check_apart gb-twice 2 "$T" groupby --keys "$d/k.u32" --agg count,count
grep -q "two columns would be named 'count'" "$err" || { echo "FAIL gb-twice message"; cat "$err"; fails=$((fails+1)); }
check_apart gb-length-mismatch 2 "$T" groupby --keys "$d/k.u32" --values "$d/v5.f64" --agg sum
grep -q "k.u32 has 6 keys but .*v5.f64 has 5 values: the columns must have the same length" "$err" \
  || { echo "FAIL gb-length-mismatch message"; cat "$err"; fails=$((fails+1)); }
check_apart gb-bad-agg 2 "$T" groupby --keys "$d/k.u32" --values "$d/v.f64" --agg median
check_apart gb-sum-needs-values 2 "$T" groupby --keys "$d/k.u32" --agg sum
check_apart gb-bad-key-type 2 "$T" groupby --keys "$d/k.u32" --key-type u8 --agg count
check_apart gb-npy-type-mismatch 2 "$T" groupby --keys "$d/k64.npy" --key-type u32 --agg count
printf 'abcde' >"$d/odd.bin"
check_apart gb-truncated 2 "$T" groupby --keys "$d/odd.bin" --agg count

check_apart gen-zipf 0 "$T" gen zipf --n 10000 --distinct 100 --exponent 1.2 --out "$d/z.npy" --values "$d/zv.f32" --value-type f32
check_apart gb-npy 0 "$T" groupby --keys "$d/z.npy" --values "$d/zv.f32" --value-type f32 --agg count,sum --explain
rows=$(($(wc -l <"$out") - 1))
[ "$rows" -ge 1 ] && [ "$rows" -le 100 ] || { echo "FAIL gen-zipf distinct rows=$rows"; fails=$((fails+1)); }
total=$(tail -n +2 "$out" | awk -F, '{s+=$2} END {print s}')
[ "$total" = "10000" ] || { echo "FAIL gb-npy total count $total"; fails=$((fails+1)); }
check_apart gen-zipf-bad 2 "$T" gen zipf --n 10 --distinct 0 --out "$d/z0.u32"
check_apart gen-text 0 "$T" gen text --bytes 50000 --vocab 300 --out "$d/t.txt"
[ "$(wc -c <"$d/t.txt")" = "50000" ] || { echo "FAIL gen-text size"; fails=$((fails+1)); }
check_apart wc-gen 0 "$T" wordcount "$d/t.txt" --top 3
[ "$(wc -l <"$out")" = "3" ] || { echo "FAIL wc --top 3"; fails=$((fails+1)); }
[ $fails -eq 0 ]
