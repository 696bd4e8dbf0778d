#!/usr/bin/env bash
# wordcount / groupby / gen zipf / gen text: outputs, formats and exit codes.
set -u
T=$1
fails=0
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
check() {  # check NAME EXPECTED_CODE CMD...
  local name=$1 want=$2; shift 2
  "$@" >"$d/out" 2>"$d/err"
  local got=$?
  if [ "$got" != "$want" ]; then
    echo "FAIL $name: exit $got, expected $want"; cat "$d/err"; fails=$((fails+1))
  else
    echo "ok   $name"
  fi
}
same() {  # same NAME FILE EXPECTED_TEXT
  if [ "$(cat "$2")" != "$3" ]; then echo "FAIL $1: got"; cat "$2"; fails=$((fails+1)); else echo "ok   $1"; fi
}
printf 'the cat and The dog; the end\n' >"$d/a.txt"
check wc 0 "$T" wordcount "$d/a.txt" --device cpu
same wc-out "$d/out" "$(printf 'the\t2\nThe\t1\nand\t1\ncat\t1\ndog\t1\nend\t1')"
check wc-lower 0 "$T" wordcount "$d/a.txt" --lowercase --top 1 --device cpu
same wc-lower-out "$d/out" "$(printf 'the\t3')"
printf 'dog dog' | "$T" wordcount - "$d/a.txt" --lowercase --device cpu --out "$d/wc.tsv" 2>/dev/null
same wc-stdin-two-files "$d/wc.tsv" "$(printf 'dog\t3\nthe\t3\nand\t1\ncat\t1\nend\t1')"
check wc-explain 0 "$T" wordcount "$d/a.txt" --explain
grep -q "wordcount" "$d/err" || { echo "FAIL wc-explain text"; fails=$((fails+1)); }
check wc-missing 2 "$T" wordcount "$d/none.txt"
check wc-bad-device 2 "$T" wordcount "$d/a.txt" --device tpu
[ -e "$d/never.tsv" ] && { echo "FAIL partial output"; fails=$((fails+1)); }
check wc-missing-no-output 2 "$T" wordcount "$d/none.txt" --out "$d/never.tsv"
[ -e "$d/never.tsv" ] && { echo "FAIL output written on error"; fails=$((fails+1)); }
head -c 3000 /dev/urandom >"$d/bin"
check wc-binary 0 "$T" wordcount "$d/bin" --device cpu
printf '' >"$d/empty.txt"
check wc-empty 0 "$T" wordcount "$d/empty.txt"
same wc-empty-out "$d/out" ""

python3 - "$d" <<'PY'
import struct, sys
d = sys.argv[1]
open(d + "/k.u32", "wb").write(struct.pack("<6I", 5, 1, 5, 2, 1, 5))
open(d + "/v.f64", "wb").write(struct.pack("<6d", 1.5, 2, 2.5, -1, 4, 0))
open(d + "/v5.f64", "wb").write(struct.pack("<5d", 1, 2, 3, 4, 5))
PY
check gb 0 "$T" groupby --keys "$d/k.u32" --key-type u32 --values "$d/v.f64" --value-type f64 --agg sum,count,min,max,mean --device cpu
same gb-out "$d/out" "$(printf 'key,sum,count,min,max,mean\n1,6,2,2,4,3\n2,-1,1,-1,-1,-1\n5,4,3,0,2.5,1.3333333333333333')"
check gb-count-only 0 "$T" groupby --keys "$d/k.u32" --agg count --out "$d/c.csv"
same gb-count-out "$d/c.csv" "$(printf 'key,count\n1,2\n2,1\n5,3')"
for eng in hash chained seed auto; do  # seed: the older name of chained
  check gb-engine-$eng 0 "$T" groupby --keys "$d/k.u32" --agg count --engine $eng --out "$d/c-$eng.csv"
  same gb-engine-$eng-out "$d/c-$eng.csv" "$(printf 'key,count\n1,2\n2,1\n5,3')"
done
check gb-bad-engine 2 "$T" groupby --keys "$d/k.u32" --agg count --engine turbo
check gb-length-mismatch 2 "$T" groupby --keys "$d/k.u32" --values "$d/v5.f64" --agg sum
grep -q "same length" "$d/err" || { echo "FAIL gb-length-mismatch message"; cat "$d/err"; fails=$((fails+1)); }
check gb-bad-agg 2 "$T" groupby --keys "$d/k.u32" --values "$d/v.f64" --agg median
check gb-sum-needs-values 2 "$T" groupby --keys "$d/k.u32" --agg sum
check gb-bad-key-type 2 "$T" groupby --keys "$d/k.u32" --key-type f32 --agg count
printf 'abcde' >"$d/odd.bin"
check gb-truncated 2 "$T" groupby --keys "$d/odd.bin" --agg count

check gen-zipf 0 "$T" gen zipf --n 10000 --distinct 100 --exponent 1.2 --out "$d/z.npy" --values "$d/zv.f32" --value-type f32
check gb-npy 0 "$T" groupby --keys "$d/z.npy" --values "$d/zv.f32" --value-type f32 --agg count,sum --explain
rows=$(($(wc -l <"$d/out") - 1))
[ "$rows" -ge 1 ] && [ "$rows" -le 100 ] || { echo "FAIL gen-zipf distinct rows=$rows"; fails=$((fails+1)); }
total=$(tail -n +2 "$d/out" | awk -F, '{s+=$2} END {print s}')
[ "$total" = "10000" ] || { echo "FAIL gb-npy total count $total"; fails=$((fails+1)); }
check gen-zipf-bad 2 "$T" gen zipf --n 10 --distinct 0 --out "$d/z0.u32"
check gen-text 0 "$T" gen text --bytes 50000 --vocab 300 --out "$d/t.txt"
[ "$(wc -c <"$d/t.txt")" = "50000" ] || { echo "FAIL gen-text size"; fails=$((fails+1)); }
check wc-gen 0 "$T" wordcount "$d/t.txt" --top 3
[ "$(wc -l <"$d/out")" = "3" ] || { echo "FAIL wc --top 3"; fails=$((fails+1)); }
[ $fails -eq 0 ]
