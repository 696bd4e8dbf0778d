#!/usr/bin/env bash
# --distributed outputs appear on every rank or on none (a rank whose output fails at its flush
# stops the others from renaming theirs); per-rank CSV shards of different inferred types widen
# as a shared file does; differing shards and parse errors name the right rank, column and line.
# Skips itself when tandem or the machine lacks MPI.
set -u
T=$1
source "$(dirname "$0")/lib.bash"
temp_dir D
export LC_ALL=C

if "$T" sort --distributed --type u32 --in /dev/null --out "$D/x" 2>&1 | grep -q "built without"; then
  echo "skip: this tandem was built without MPI"; exit 0
fi
command -v mpirun >/dev/null || { echo "skip: no mpirun"; exit 0; }
[ -w /dev/full ] || { echo "skip: no /dev/full"; exit 0; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 OMP_NUM_THREADS=1
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
MPI="mpirun -np"
no_outputs() {  # no_outputs NAME GLOB...: none of the files exist
  local name=$1; shift
  for f in "$@"; do
    [ -e "$f" ] && { echo "FAIL $name: $f was left behind"; fails=$((fails+1)); }
  done
  return 0
}

printf 'k,v\n' >"$D/t.csv"
for i in $(seq 1 300); do printf '%s,%s\n' "k$((i % 7))" "$i" >>"$D/t.csv"; done
"$T" gen zipf --n 5000 --distinct 100 --type u32 --out "$D/keys.npy" >/dev/null 2>&1

# Rank 1's output is /dev/full (written in place): its write fails at the flush, after the other
# ranks wrote theirs. Every rank exits 1 and no rank's output stays.
ln -s /dev/full "$D/g-1.csv"
check groupby-one-output-fails 1 $MPI 3 "$T" groupby --distributed "$D/t.csv" --by k --agg 'sum(v)' --device cpu --out "$D/g-{rank}.csv"
grep -q "rank 1: .*g-1.csv: write failed" "$out" || { echo "FAIL groupby-one-output-fails: message"; cat "$out"; fails=$((fails+1)); }
no_outputs groupby-one-output-fails "$D/g-0.csv" "$D/g-2.csv"
ln -s /dev/full "$D/s-1.npy"
check sort-one-output-fails 1 $MPI 3 "$T" sort --distributed --type u32 --in "$D/keys.npy" --out "$D/s-{rank}.npy"
no_outputs sort-one-output-fails "$D/s-0.npy" "$D/s-2.npy"
check sort-hint-no-gather 2 $MPI 2 "$T" sort --distributed --type u32 --in "$D/keys.npy" --out "$D/one.npy"
grep -q -- "--gather" "$out" && { echo "FAIL sort-hint-no-gather: sort has no --gather"; fails=$((fails+1)); }
ls "$D" | grep -q tmp && { echo "FAIL temporaries left"; ls "$D"; fails=$((fails+1)); }

# Per-rank shards: integers on one rank, floats on another, a header-only one: widened to f64,
# the answer of one process over their rows.
printf 'k,v\na,1\nb,2\n' >"$D/p-0.csv"
printf 'k,v\na,1.5\nc,-0.5\n' >"$D/p-1.csv"
printf 'k,v\n' >"$D/p-2.csv"
cat "$D/p-0.csv" <(tail -n +2 "$D/p-1.csv") >"$D/p-all.csv"
"$T" groupby "$D/p-all.csv" --by k --agg 'sum(v),max(v)' --device cpu --out "$D/p-one.csv"
check shards-widen 0 $MPI 3 "$T" groupby --distributed --gather "$D/p-{rank}.csv" --by k --agg 'sum(v),max(v)' --device cpu --out "$D/p-got.csv"
cmp -s "$D/p-one.csv" "$D/p-got.csv" || { echo "FAIL shards-widen: differs"; cat "$D/p-one.csv" "$D/p-got.csv"; fails=$((fails+1)); }
printf 'k,w\nz,1\n' >"$D/p-2.csv"
check shards-differ 2 $MPI 3 "$T" groupby --distributed --gather "$D/p-{rank}.csv" --by k --agg 'count()' --device cpu
grep -q "rank 2: .*p-2.csv: column 2 is 'w' here and 'v' on rank 0" "$out" || { echo "FAIL shards-differ: message"; cat "$out"; fails=$((fails+1)); }

# A parse error in a shared file: the file's own line, as one process names it.
{ printf 'k,v\n'; for i in $(seq 1 2000); do printf 'k%s,%s\n' "$((i % 5))" "$i"; done; printf 'k1,2,3\n'; for i in $(seq 1 50); do printf 'k1,%s\n' "$i"; done; } >"$D/bad.csv"
check parse-error-one 2 "$T" groupby "$D/bad.csv" --by k --agg 'sum(v)' --device cpu
grep -q "bad.csv:2002: column 3" "$out" || { echo "FAIL parse-error-one: message"; cat "$out"; fails=$((fails+1)); }
for np in 2 3; do
  check parse-error-np$np 2 $MPI $np "$T" groupby --distributed --gather "$D/bad.csv" --by k --agg 'sum(v)' --device cpu
  grep -q "rank [0-9]: .*bad.csv:2002: column 3" "$out" || { echo "FAIL parse-error-np$np: message"; cat "$out"; fails=$((fails+1)); }
done
exit $fails
