#!/usr/bin/env bash
# tandem sort's table form: CSV by several keys (directions, missing values first or last, NaN,
# quoting), --limit, a random table against Python's sorted(), bad --by (exit 2, no output), and
# the array form still working beside it.
set -u
T=$1
source "$(dirname "$0")/lib.bash"
temp_dir d
printf 'k,v,s\nb,2,x\na,,"y, z"\nb,1,\n,3,w\na,nan,v\na,-0,u\na,0,t\n' >"$d/t.csv"
check by-two 0 "$T" sort "$d/t.csv" --by k,v:desc --out "$d/s.csv"
same by-two-out "$d/s.csv" "$(printf 'k,v,s\na,nan,v\na,-0,u\na,0,t\na,,"y, z"\nb,2,x\nb,1,\n,3,w')"
check nulls-first 0 "$T" sort "$d/t.csv" --by k,v --nulls first --out -
same nulls-first-out "$out" "$(printf 'k,v,s\n,3,w\na,,"y, z"\na,-0,u\na,0,t\na,nan,v\nb,1,\nb,2,x')"
check limit 0 "$T" sort "$d/t.csv" --by v:asc --limit 2 --out -
same limit-out "$out" "$(printf 'k,v,s\na,-0,u\na,0,t')"
check limit-zero 0 "$T" sort "$d/t.csv" --by v --limit 0 --out -
same limit-zero-out "$out" "k,v,s"
check explain 0 "$T" sort "$d/t.csv" --by s --out "$d/e.csv" --explain --threads 2
grep -q "encode keys" "$out" && grep -q "write output" "$out" || { echo "FAIL explain text"; cat "$out"; fails=$((fails+1)); }
# a random table against Python's sorted() with a key tuple (stable, as tandem)
python3 - "$d/r.csv" <<'PY'
import random, sys
random.seed(46)
with open(sys.argv[1], "w") as f:
    f.write("a,b,c,payload\n")
    for i in range(20000):
        a = random.choice(["", "id0000000001", "id0000000002", "id00000000010", "x"])
        b = random.choice(["", "-1", "0", "7", "123456789012"])
        c = random.choice(["", "1.5", "-2.25", "0", "1e10"])
        f.write(f"{a},{b},{c},{i}\n")
PY
check random 0 "$T" sort "$d/r.csv" --by a,b:desc,c --schema a:str --out "$d/rs.csv" --threads 2
python3 - "$d/r.csv" "$d/rs.csv" <<'PY' || { echo "FAIL random order"; fails=$((fails+1)); }
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
def key(r):
    a, b, c = r["a"], r["b"], r["c"]
    return ((a == "", a), (b == "", -int(b) if b else 0), (c == "", float(c) if c else 0))
want = [r["payload"] for r in sorted(rows, key=key)]
got = [r["payload"] for r in csv.DictReader(open(sys.argv[2]))]
assert got == want, "order differs"
PY
# standard input is read whole: a key whose type widens after the sample (i64, then 2.5) is read
# again from memory, and the output is the file's sort
python3 -c 'print("k,v"); [print(f"{(i * 7919) % 1000},{i}") for i in range(30000)]; print("2.5,last")' >"$d/w.csv"
check stdin-widens 0 bash -c "cat '$d/w.csv' | '$T' sort - --by k:desc --out '$d/w-stdin.csv'"
check file-widens 0 "$T" sort "$d/w.csv" --by k:desc --out "$d/w-file.csv"
cmp -s "$d/w-stdin.csv" "$d/w-file.csv" || { echo "FAIL stdin sort differs from the file's"; fails=$((fails+1)); }
python3 - "$d/w.csv" "$d/w-stdin.csv" <<'PY' || { echo "FAIL stdin order"; fails=$((fails+1)); }
import sys
rows = open(sys.argv[1]).read().splitlines()[1:]
want = sorted(rows, key=lambda r: -float(r.split(",")[0]))  # stable, as tandem
assert open(sys.argv[2]).read().splitlines()[1:] == want
PY
# a gzip file streams through its decompressor, widening and all: the same output
if command -v gzip >/dev/null; then
  gzip -c "$d/w.csv" >"$d/w.csv.gz"
  check gz-widens 0 "$T" sort "$d/w.csv.gz" --by k:desc --out "$d/w-gz.csv"
  cmp -s "$d/w-gz.csv" "$d/w-file.csv" || { echo "FAIL gzip sort differs from the file's"; fails=$((fails+1)); }
fi
# --device cpu gives the same file as the default (auto: the GPU only for large tables where one is)
check random-cpu 0 "$T" sort "$d/r.csv" --by a,b:desc,c --schema a:str --out "$d/rs-cpu.csv" --threads 2 --device cpu
cmp -s "$d/rs.csv" "$d/rs-cpu.csv" || { echo "FAIL --device cpu output differs"; fails=$((fails+1)); }
# bad --by: exit 2, the key named, no output file
check missing-column 2 "$T" sort "$d/t.csv" --by k,nope --out "$d/none.csv"
grep -q "nope" "$out" || { echo "FAIL missing-column message"; cat "$out"; fails=$((fails+1)); }
check bad-direction 2 "$T" sort "$d/t.csv" --by v:down --out "$d/none.csv"
grep -q "v:down" "$out" || { echo "FAIL bad-direction message"; cat "$out"; fails=$((fails+1)); }
check empty-key 2 "$T" sort "$d/t.csv" --by k, --out "$d/none.csv"
check twice 2 "$T" sort "$d/t.csv" --by k,k --out "$d/none.csv"
check bad-nulls 2 "$T" sort "$d/t.csv" --by k --nulls middle --out "$d/none.csv"
check no-by 2 "$T" sort "$d/t.csv" --out "$d/none.csv"
check no-file 2 "$T" sort "$d/missing.csv" --by k --out "$d/none.csv"
check mixed-forms 2 "$T" sort "$d/t.csv" --by k --type u32 --out "$d/none.csv"
check hybrid-table 2 "$T" sort "$d/t.csv" --by k --device hybrid --out "$d/none.csv"
grep -q "device" "$out" || { echo "FAIL hybrid-table message"; cat "$out"; fails=$((fails+1)); }
[ ! -e "$d/none.csv" ] || { echo "FAIL a refused sort left an output"; fails=$((fails+1)); }
# the array form keeps working
"$T" gen zipf --n 1000 --distinct 10 --type u32 --out "$d/k.npy" >/dev/null 2>&1
check array-form 0 "$T" sort --type u32 --in "$d/k.npy" --out "$d/ks.npy" --device cpu
[ $fails -eq 0 ]
