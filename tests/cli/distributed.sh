#!/usr/bin/env bash
# --distributed: sort, groupby and wordcount as ranks of an MPI job equal the one-process run;
# a bad shard on one rank makes every rank exit 2 with its message and no output file; a rank
# that dies ends the job within seconds. Skips itself when tandem or the machine lacks MPI.
set -u
T=$1
source "$(dirname "$0")/lib.bash"
temp_dir D

if "$T" sort --distributed --type u32 --in /dev/null --out "$D/x" 2>&1 | grep -q "built without"; then
  check no-mpi-exit-2 2 "$T" sort --distributed --type u32 --in /dev/null --out "$D/x"
  echo "skip: this tandem was built without MPI"; exit $fails
fi
command -v mpirun >/dev/null || { echo "skip: no mpirun"; exit 0; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 OMP_NUM_THREADS=1
# In sanitizer builds, LeakSanitizer's exit-time tracer sometimes crashes (signal 11) in one of four
# oversubscribed ranks on two cores, failing a step that leaked nothing. Leaks of the distributed
# code are checked by the dist.np1..np4 tests under the same sanitizer; this script checks results
# and exit codes.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
MPI="mpirun -np"

python3 - "$D" <<'PY'
import random, struct, sys
d = sys.argv[1]
rng = random.Random(5)
def npy(path, code, fmt, values):
    header = "{'descr': '<%s', 'fortran_order': False, 'shape': (%d,), }" % (code, len(values))
    header += " " * (63 - (len(header) + 10) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%d%s" % (len(values), fmt), *values))
keys = [rng.randrange(0, 1000) for _ in range(10007)]
npy(d + "/keys.npy", "u4", "I", keys)
for r in range(3):
    npy(d + "/k-%d.npy" % r, "u4", "I", keys[r * 3000:(r + 1) * 3000] if r < 2 else keys[6000:])
npy(d + "/all-sorted.npy", "u4", "I", sorted(keys))
npy(d + "/vals.npy", "u8", "Q", list(range(len(keys))))
with open(d + "/t.csv", "w") as f:
    f.write("id,name,v\n")
    for i in range(5000):
        name = rng.choice(['a', 'b,c', '"q"', 'line\nbreak', ''])
        f.write('%d,"%s",%s\n' % (rng.randrange(20), name.replace('"', '""'), rng.choice(['1', '2.5', '', '-0.0'])))
# Literal quotes inside unquoted fields (37"N) break quote parity: the split must follow the dialect.
with open(d + "/lit.csv", "w") as f:
    f.write("id,name,v\n")
    for i in range(5000):
        name = rng.choice(['37"N', 'a"', '"q""x"', '"line\nbreak"', 'plain', '"x,y"'])
        f.write('%d,%s,%s\n' % (rng.randrange(20), name, rng.choice(['1', '2.5', '', '-0.0'])))
with open(d + "/text.txt", "w") as f:
    for i in range(20000):
        f.write(rng.choice(['the', 'a', 'tandem', 'Word', 'word', 'x1']) + (' ' if i % 7 else '\n'))
PY

# concat FILE...: the elements of .npy files back to back (their data after the header)
concat() { python3 -c '
import sys
out = b""
for p in sys.argv[1:]:
    b = open(p, "rb").read(); out += b[10 + int.from_bytes(b[8:10], "little"):]
sys.stdout.buffer.write(out)' "$@"; }

for np in 1 2 3 4; do
  check sort-shared-np$np 0 $MPI $np "$T" sort --distributed --type u32 --in "$D/keys.npy" --out "$D/s-{rank}.npy"
  files=(); for ((r = 0; r < np; r++)); do files+=("$D/s-$r.npy"); done
  cmp -s <(concat "${files[@]}") <(concat "$D/all-sorted.npy") || { echo "FAIL sort-shared-np$np: slices differ"; fails=$((fails+1)); }
  rm -f "$D"/s-*.npy
done
check sort-own-files 0 $MPI 3 "$T" sort --distributed --type u32 --in "$D/k-{rank}.npy" --out "$D/s-{rank}-of-{size}.npy" --explain
grep -q "exchange" "$out" || { echo "FAIL sort-own-files: no exchange stage in --explain"; fails=$((fails+1)); }
cmp -s <(concat "$D"/s-0-of-3.npy "$D"/s-1-of-3.npy "$D"/s-2-of-3.npy) <(concat "$D/all-sorted.npy") \
  || { echo "FAIL sort-own-files: slices differ"; fails=$((fails+1)); }
check sort-pairs 0 $MPI 2 "$T" sort --distributed --type u32 --in "$D/keys.npy" --out "$D/p-{rank}.npy" \
  --values "$D/vals.npy" --values-type u64 --values-out "$D/pv-{rank}.npy"
"$T" sort --type u32 --in "$D/keys.npy" --out "$D/one.npy" --values "$D/vals.npy" --values-type u64 --values-out "$D/onev.npy"
cmp -s <(concat "$D"/pv-0.npy "$D"/pv-1.npy) <(concat "$D/onev.npy") || { echo "FAIL sort-pairs: values differ (stability)"; fails=$((fails+1)); }

# Errors: every rank exits 2, the message names the rank and the file, no output appears.
printf 'not a npy file' >"$D/k-bad.npy"; cp "$D/k-0.npy" "$D/kb-0.npy"; cp "$D/k-bad.npy" "$D/kb-1.npy"; cp "$D/k-2.npy" "$D/kb-2.npy"
check sort-bad-shard 2 $MPI 3 "$T" sort --distributed --type u32 --in "$D/kb-{rank}.npy" --out "$D/bad-{rank}.npy"
grep -q "rank 1: .*kb-1.npy.*magic" "$out" || { echo "FAIL sort-bad-shard: message"; cat "$out"; fails=$((fails+1)); }
ls "$D"/bad-* >/dev/null 2>&1 && { echo "FAIL sort-bad-shard: an output file appeared"; fails=$((fails+1)); }
check sort-missing-shard 2 $MPI 2 "$T" sort --distributed --type u32 --in "$D/nope-{rank}.npy" --out "$D/bad-{rank}.npy"
check sort-out-needs-rank 2 $MPI 2 "$T" sort --distributed --type u32 --in "$D/keys.npy" --out "$D/bad.npy"
grep -q "{rank}" "$out" || { echo "FAIL sort-out-needs-rank: message"; fails=$((fails+1)); }

# Group-by of a shared CSV with quoted line breaks, gathered and partitioned.
"$T" groupby "$D/t.csv" --by id,name --agg 'count(),sum(v),mean(v),max(v)' --out "$D/g-one.csv"
for np in 2 3; do
  check groupby-gather-np$np 0 $MPI $np "$T" groupby --distributed --gather "$D/t.csv" --by id,name \
    --agg 'count(),sum(v),mean(v),max(v)' --out "$D/g-$np.csv"
  cmp -s "$D/g-one.csv" "$D/g-$np.csv" || { echo "FAIL groupby-gather-np$np: differs"; diff "$D/g-one.csv" "$D/g-$np.csv" | head; fails=$((fails+1)); }
done
check groupby-partitioned 0 $MPI 3 "$T" groupby --distributed "$D/t.csv" --by id,name --agg 'median(v),count()' --out "$D/gp-{rank}.csv"
"$T" groupby "$D/t.csv" --by id,name --agg 'median(v),count()' --out "$D/gp-one.csv"
[ "$( (tail -q -n +2 "$D"/gp-0.csv "$D"/gp-1.csv "$D"/gp-2.csv) | wc -l)" = "$(tail -n +2 "$D/gp-one.csv" | wc -l)" ] \
  || { echo "FAIL groupby-partitioned: group count"; fails=$((fails+1)); }

# A shared CSV with literal quotes: every cut finds the record starts one reader finds.
"$T" groupby "$D/lit.csv" --by id,name --agg 'count(),sum(v)' --out "$D/l-one.csv"
for np in 2 3 4; do
  check groupby-literal-quotes-np$np 0 $MPI $np "$T" groupby --distributed --gather "$D/lit.csv" --by id,name \
    --agg 'count(),sum(v)' --out "$D/l-$np.csv"
  cmp -s "$D/l-one.csv" "$D/l-$np.csv" || { echo "FAIL groupby-literal-quotes-np$np: differs"; diff "$D/l-one.csv" "$D/l-$np.csv" | head; fails=$((fails+1)); }
done

# Word count of a shared text file.
"$T" wordcount "$D/text.txt" --out "$D/w-one.tsv" --device cpu
check wordcount-gather 0 $MPI 3 "$T" wordcount --distributed --gather "$D/text.txt" --out "$D/w-3.tsv" --device cpu
cmp -s "$D/w-one.tsv" "$D/w-3.tsv" || { echo "FAIL wordcount-gather: differs"; fails=$((fails+1)); }

# Top-k of one shared lists file, each rank holding some of the lists (TPUT): the one-process answer.
"$T" gen topk --objects 20000 --lists 4 --dist uniform --seed 3 --out "$D/t.tkl" >/dev/null
"$T" topk --lists "$D/t.tkl" --k 10 --json >"$D/topk-one.json"
check topk-lists-by-rank 0 $MPI 3 "$T" topk --distributed --lists "$D/t.tkl" --k 10 --json
same topk-lists-by-rank-result "$out" "$(cat "$D/topk-one.json")"

# A rank that dies mid-run: rank 1 blocks reading a FIFO (the others wait for it in the first
# collective) and is killed after 2 s; the job must end, non-zero, well within 30 s.
cp "$D/k-0.npy" "$D/f-0.npy"; mkfifo "$D/f-1.npy"; cp "$D/k-2.npy" "$D/f-2.npy"
start=$(date +%s)
timeout -s KILL 60 $MPI 3 bash -c \
  'if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then (sleep 2; kill -9 $$) & fi; exec "$0" sort --distributed --type u32 --in "$1" --out "$2"' \
  "$T" "$D/f-{rank}.npy" "$D/killed-{rank}.npy" >"$out" 2>&1
code=$? took=$(( $(date +%s) - start ))
if [ $code = 0 ] || [ $took -ge 30 ]; then echo "FAIL rank-killed: exit $code after $took s"; cat "$out"; fails=$((fails+1)); else echo "ok   rank-killed (exit $code after $took s)"; fi
ls "$D"/killed-* >/dev/null 2>&1 && { echo "FAIL rank-killed: an output file appeared"; fails=$((fails+1)); }
exit $fails
