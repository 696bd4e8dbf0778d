#!/usr/bin/env bash
# groupby on tables: --column inputs, aggregation text, CSV output, --explain, and exit codes
# (2 and no output file for bad usage or input). The --keys form is in mapreduce.sh.
set -u
T=$1
source "$(dirname "$0")/lib.bash"
temp_dir d
python3 - "$d" <<'PY'
import struct, sys
d = sys.argv[1]
def npy(name, descr, fmt, values):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%d,), }" % (descr, len(values))
    header += ' ' * (63 - (10 + len(header)) % 64) + '\n'
    with open(d + '/' + name, 'wb') as f:
        f.write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(header)) + header.encode())
        f.write(struct.pack('<%d%s' % (len(values), fmt), *values))
npy('k.npy', '<i4', 'i', [3, 1, 3, 2, 1, 3])
npy('g.npy', '<u8', 'Q', [7, 7, 7, 8, 8, 8])
npy('v.npy', '<f8', 'd', [1.5, 2, 2.5, -1, 4, 0])
npy('big.npy', '<i8', 'q', [2**63 - 1, 1, 1, 0, 0, 0])  # k = 3: rows 0 and 2 overflow
npy('short.npy', '<f8', 'd', [1.0])
npy('b.npy', '|i1', 'b', [1] * 6)
open(d + '/raw.i64', 'wb').write(struct.pack('<6q', 10, 20, 30, 40, 50, 60))
PY
check table 0 "$T" groupby --column k="$d/k.npy" --column v="$d/v.npy" --by k \
  --agg 'sum(v),count(),median(v),top(v,2),first(v) as f' --out "$d/a.csv"
same table-out "$d/a.csv" "$(printf 'k,sum_v,count,median_v,top1_v,top2_v,f\n1,6,2,3,4,2,2\n2,-1,1,-1,-1,,-1\n3,4,3,1.5,2.5,1.5,1.5')"
check two-keys-raw-column 0 "$T" groupby --column g="$d/g.npy" --column k="$d/k.npy" --column r="$d/raw.i64:i64" \
  --by g,k --agg 'sum(r),max(r)' --threads 2 --device cpu --out "$d/b.csv"
same two-keys-out "$d/b.csv" "$(printf 'g,k,sum_r,max_r\n7,1,20,20\n7,3,40,30\n8,1,50,50\n8,2,40,40\n8,3,60,60')"
check explain 0 "$T" groupby --column k="$d/k.npy" --column v="$d/v.npy" --by k --agg 'median(v)' --explain --out "$d/c.csv"
grep -q "median(v): CPU engine, holistic" "$out" || { echo "FAIL explain names the engine per aggregation"; cat "$out"; fails=$((fails+1)); }

# Bad usage or input: exit 2, and the output file is not written.
for case in \
  "overflow|--column k=$d/k.npy --column big=$d/big.npy --by k --agg sum(big)|'big'" \
  "unknown-agg|--column k=$d/k.npy --by k --agg avg(k)|avg(k)" \
  "no-column|--column k=$d/k.npy --by nope --agg count()|nope" \
  "sum-of-key-strings-type|--column k=$d/k.npy --column v=$d/v.npy --by k --agg nunique(v),count(v),sum(v),sum(v)|sum_v" \
  "length-mismatch|--column k=$d/k.npy --column s=$d/short.npy --by k --agg count()|short.npy" \
  "int8-column|--column k=$d/k.npy --column b=$d/b.npy --by k --agg count()|i8" \
  "raw-needs-type|--column k=$d/k.npy --column r=$d/raw.i64 --by k --agg count()|needs its type" \
  "no-by|--column k=$d/k.npy --agg count()|--by" \
  "key-value-form-option|--column k=$d/k.npy --by k --agg count() --values $d/v.npy|--values" \
  "bad-delimiter|--column k=$d/k.npy --by k --agg count() --delimiter ;|delimiter"; do
  IFS='|' read -r name args want <<<"$case"
  # shellcheck disable=SC2086
  check "$name" 2 "$T" groupby $args --out "$d/never.csv"
  grep -q -- "$want" "$out" || { echo "FAIL $name: message lacks '$want'"; cat "$out"; fails=$((fails+1)); }
  [ -e "$d/never.csv" ] && { echo "FAIL $name: output written"; fails=$((fails+1)); rm -f "$d/never.csv"; }
done
[ $fails -eq 0 ]
