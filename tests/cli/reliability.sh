#!/usr/bin/env bash
# Hostile inputs on the table paths: nothing crashes, hangs or answers wrong. TANDEM_THREADS is
# checked as --threads is; floats beyond f64 are errors; CSV from <(...), FIFOs and /proc files
# is read; a CSV truncated while read ends without a signal; too little memory is exit 1; the
# small cases of the reliability list (header-only files, a NUL in a name, -0.0) answer right.
set -u
T=$1
source "$(dirname "$0")/lib.bash"
temp_dir d
export LC_ALL=C
printf 'k,v\na,10\nb,9\na,1\n' >"$d/t.csv"

# TANDEM_THREADS: the same range as --threads, exit 2 naming the variable, no output file.
for bad in 100000 4097 0 -3 abc ''4x; do
  check "threads-env $bad" 2 env TANDEM_THREADS="$bad" "$T" groupby "$d/t.csv" --by k --agg 'sum(v)' --device cpu --out "$d/no.csv"
  grep -q "TANDEM_THREADS: must be an integer from 1 to 4096" "$out" || { echo "FAIL threads-env $bad message"; cat "$out"; fails=$((fails+1)); }
  [ ! -e "$d/no.csv" ] || { echo "FAIL threads-env $bad left an output"; rm -f "$d/no.csv"; fails=$((fails+1)); }
done
check threads-env-sort 2 env TANDEM_THREADS=100000 "$T" sort --type u32 --in /dev/null --out "$d/no.u32"
check threads-env-ok 0 env TANDEM_THREADS=3 "$T" groupby "$d/t.csv" --by k --agg 'sum(v)' --device cpu
same threads-env-ok-out "$out" "$(printf 'k,sum_v\na,11\nb,9')"

# 1e309 (and its kin) in an inferred number column: exit 2 naming file, line and column.
for big in 1e309 -1e309 1.8e308; do
  printf 'k,v\na,10\nb,9\nc,%s\n' "$big" >"$d/big.csv"
  check "huge-float $big" 2 "$T" groupby "$d/big.csv" --by k --agg 'max(v)' --device cpu --out "$d/no.csv"
  grep -q "big.csv:4: column 2 ('v'): '$big' is beyond the range of f64" "$out" || { echo "FAIL huge-float $big message"; cat "$out"; fails=$((fails+1)); }
  [ ! -e "$d/no.csv" ] || { echo "FAIL huge-float $big left an output"; rm -f "$d/no.csv"; fails=$((fails+1)); }
  check "huge-float-key $big" 2 "$T" groupby "$d/big.csv" --by v --agg 'count()' --device cpu
done
check huge-float-as-text 0 "$T" groupby "$d/big.csv" --by v --agg 'count()' --schema v:str --device cpu

# Inputs whose size says nothing: process substitution, a FIFO, a /proc file.
check csv-process-substitution 0 bash -c '"$1" groupby <(cat "$2") --by k --agg "sum(v)" --device cpu' _ "$T" "$d/t.csv"
same csv-process-substitution-out "$out" "$(printf 'k,sum_v\na,11\nb,9')"
mkfifo "$d/fifo.csv"
(cat "$d/t.csv" >"$d/fifo.csv") &
check csv-fifo 0 "$T" groupby "$d/fifo.csv" --by k --agg 'sum(v)' --device cpu
wait
same csv-fifo-out "$out" "$(printf 'k,sum_v\na,11\nb,9')"
if [ -r /proc/sys/kernel/ostype ]; then
  check csv-proc 0 "$T" groupby /proc/sys/kernel/ostype --by Linux --agg 'count()' --device cpu
  same csv-proc-out "$out" "Linux,count"
fi
check csv-stdin 0 bash -c 'cat "$2" | "$1" groupby - --by k --agg "sum(v)" --device cpu' _ "$T" "$d/t.csv"

# A CSV truncated while groupby reads it: exit 0 (read before the cut) or 2 (the cut reported),
# never a signal (it was mapped: SIGBUS).
"$T" gen groupby --rows 400000 --k 100 --out "$d/big-g.csv" >/dev/null 2>&1
for delay in 0 0.01 0.03 0.08; do
  cp "$d/big-g.csv" "$d/shrink.csv"
  "$T" groupby "$d/shrink.csv" --by id1 --agg 'sum(v1),mean(v3)' --device cpu --out "$d/shrink-out.csv" >"$out" 2>&1 &
  pid=$!
  sleep "$delay"
  truncate -s 100000 "$d/shrink.csv"
  wait "$pid"
  rc=$?
  if [ "$rc" != 0 ] && [ "$rc" != 2 ]; then echo "FAIL shrink after $delay s: exit $rc"; cat "$out"; fails=$((fails+1)); else echo "ok   shrink after $delay s (exit $rc)"; fi
  rm -f "$d/shrink-out.csv"
done

# A header-only file and an all-missing column: read without error (the scan infers no type from
# missing values: i64), the sums missing like pandas' min_count=1.
printf 'k,v\n' >"$d/header-only.csv"
check header-only-sum 0 "$T" groupby "$d/header-only.csv" --by k --agg 'sum(v)' --device cpu
same header-only-sum "$out" "k,sum_v"
printf 'k,v\na,\nb,\n' >"$d/all-missing.csv"
check all-missing-sum 0 "$T" groupby "$d/all-missing.csv" --by k --agg 'sum(v)' --device cpu
same all-missing-sum "$out" "$(printf 'k,sum_v\na,\nb,')"

# Small things: a NUL in a header name does not end the message; a stray parenthesis is named;
# npy files cannot go to standard output; top 1 and max agree on -0.0 and 0.0.
printf 'k\0x,v\na,1\n' >"$d/nul.csv"
check nul-in-header 2 "$T" groupby "$d/nul.csv" --by q --agg 'sum(v)' --device cpu
grep -qF "no column 'q' (columns: k\\x00x, v)" "$out" || { echo "FAIL nul-in-header: message"; cat -v "$out"; fails=$((fails+1)); }
check stray-parenthesis 2 "$T" groupby "$d/t.csv" --by k --agg 'sum(v))' --device cpu
grep -q "'sum(v))': unbalanced parentheses" "$out" || { echo "FAIL stray-parenthesis: message"; cat "$out"; fails=$((fails+1)); }
(cd "$d" && check npy-to-stdout 2 "$T" groupby t.csv --by k --agg 'sum(v)' --device cpu --out - --out-format npy)
[ ! -e "$d/-" ] || { echo "FAIL npy-to-stdout wrote a folder named -"; fails=$((fails+1)); }
printf 'k,v\na,-0.0\na,0.0\nb,0.0\nb,-0.0\n' >"$d/zeros.csv"
check zeros 0 "$T" groupby "$d/zeros.csv" --by k --agg 'max(v),top(v,1),min(v)' --device cpu
same zeros "$out" "$(printf 'k,max_v,top1_v,min_v\na,0,0,-0\nb,0,0,-0')"

# Too little memory to read the input: exit 1 "out of memory", not 2, no output. The limit: 16 MB
# above the least address space the program starts in, too little for a 20 MB file.
floor=0
# AddressSanitizer reserves terabytes of address space at start: no ulimit -v run there.
if ldd "$T" 2>/dev/null | grep -q libasan; then
  echo "skipped memory-limit: an AddressSanitizer build cannot run under ulimit -v"
  [ $fails -eq 0 ]
  exit
fi
for kb in $(seq 20000 8000 800000); do
  if bash -c 'ulimit -v "$1"; exec "$2" --version' _ "$kb" "$T" >/dev/null 2>&1; then floor=$kb; break; fi
done
check memory-limit 1 bash -c 'ulimit -v "$4"; exec "$1" groupby "$2" --by id1 --agg "sum(v1)" --device cpu --threads 1 --out "$3"' _ "$T" "$d/big-g.csv" "$d/no.csv" "$((floor + 16000))"
grep -q "out of memory" "$out" || { echo "FAIL memory-limit message"; cat "$out"; fails=$((fails+1)); }
[ ! -e "$d/no.csv" ] || { echo "FAIL memory-limit left an output"; fails=$((fails+1)); }
[ -z "$(ls "$d" | grep tmp)" ] || { echo "FAIL temporary files left"; ls "$d"; fails=$((fails+1)); }
[ $fails -eq 0 ]
