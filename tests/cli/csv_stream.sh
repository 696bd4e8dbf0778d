#!/usr/bin/env bash
# groupby streaming a CSV: standard input and a FIFO (one pass), .gz and .zst input (where the
# tools are installed), the same answers as the plain file, a type widened after the sample (a
# second pass over a file; an error naming the column on a pipe), --explain describing the scan,
# malformed compressed input (exit 2, no output), spilling with a tiny --memory-limit (by key
# range, the output written piece by piece: the same bytes as in memory).
set -u
T=$1
source "$(dirname "$0")/lib.bash"
temp_dir d
{
  echo 'k,zip,v'
  for i in $(seq 1 3000); do echo "k$((i % 5)),0$((i % 7))123,$i"; done
} >"$d/t.csv"
want=$(printf 'k,sum_v,count\nk0,901500,600\nk1,899100,600\nk2,899700,600\nk3,900300,600\nk4,900900,600')
check file 0 "$T" groupby "$d/t.csv" --by k --agg 'sum(v),count()'
same file-out "$out" "$want"
check stdin 0 bash -c "\"$T\" groupby - --by k --agg 'sum(v),count()' <\"$d/t.csv\""
same stdin-out "$out" "$want"
mkfifo "$d/fifo.csv"
(cat "$d/t.csv" >"$d/fifo.csv" &)
check fifo 0 "$T" groupby "$d/fifo.csv" --by k --agg 'sum(v),count()'
same fifo-out "$out" "$want"
# leading zeros: the zip column is text, its keys keep their zeros
check zip 0 "$T" groupby "$d/t.csv" --by zip --agg 'count()'
head -2 "$out" | tail -1 | grep -q '^00123,' || { echo "FAIL zip keeps leading zeros"; cat "$out"; fails=$((fails+1)); }
if command -v gzip >/dev/null; then
  gzip -c "$d/t.csv" >"$d/t.csv.gz"
  check gz 0 "$T" groupby "$d/t.csv.gz" --by k --agg 'sum(v),count()'
  same gz-out "$out" "$want"
  printf 'not gzip at all' >"$d/bad.csv.gz"
  check gz-bad 2 "$T" groupby "$d/bad.csv.gz" --by k --agg 'count()' --out "$d/none.csv"
  [ ! -e "$d/none.csv" ] || { echo "FAIL gz-bad left an output"; fails=$((fails+1)); }
fi
# A build without libzstd says so naming the file (exit 2): the .zst checks need one with it.
if command -v zstd >/dev/null; then zstd -q -c "$d/t.csv" >"$d/t.csv.zst"; fi
if [ -e "$d/t.csv.zst" ] && "$T" groupby "$d/t.csv.zst" --by k --agg 'count()' --out "$d/probe.csv" 2>&1 |
     grep -q 'no libzstd support'; then
  echo "skip zst: this build of tandem has no libzstd"
elif [ -e "$d/t.csv.zst" ]; then
  check zst 0 "$T" groupby "$d/t.csv.zst" --by k --agg 'sum(v),count()'
  same zst-out "$out" "$want"
  head -c 100 "$d/t.csv.zst" >"$d/cut.csv.zst"
  check zst-truncated 2 "$T" groupby "$d/cut.csv.zst" --by k --agg 'count()' --out "$d/none.csv"
  [ ! -e "$d/none.csv" ] || { echo "FAIL zst-truncated left an output"; fails=$((fails+1)); }
fi
# a value after the sample that is not an integer: a file is read again, a pipe cannot be
{ cat "$d/t.csv"; for i in $(seq 1 30000); do echo "k1,1,1"; done; echo 'k1,1,2.5'; } >"$d/late.csv"
check late-float 0 "$T" groupby "$d/late.csv" --by k --agg 'sum(v)' --explain
grep -q '^k1,929102.5$' "$out" || { echo "FAIL late-float answer"; cat "$out"; fails=$((fails+1)); }
grep -q "2 passes" "$out" || { echo "FAIL late-float explain"; cat "$out"; fails=$((fails+1)); }
check late-float-pipe 2 bash -c "cat \"$d/late.csv\" | \"$T\" groupby - --by k --agg 'sum(v)'"
grep -q "'v'" "$out" || { echo "FAIL late-float-pipe message"; cat "$out"; fails=$((fails+1)); }
check late-float-schema 0 bash -c "cat \"$d/late.csv\" | \"$T\" groupby - --by k --agg 'sum(v)' --schema v:f64"
check late-float-i64 2 "$T" groupby "$d/late.csv" --by k --agg 'sum(v)' --schema v:i64
grep -q "late.csv:33002: column 3 ('v'): '2.5' is not an i64" "$out" || { echo "FAIL late-float-i64 message"; cat "$out"; fails=$((fails+1)); }
check explain 0 "$T" groupby "$d/t.csv" --by k --agg 'sum(v)' --explain --threads 2
grep -q "scan csv.*2 threads.*2 of 3 columns read" "$out" || { echo "FAIL explain text"; cat "$out"; fails=$((fails+1)); }
grep -q "write output.*groups as CSV" "$out" || { echo "FAIL explain write output"; cat "$out"; fails=$((fails+1)); }
# auto: a small file goes to the CPU by the estimate alone, without looking for a GPU (a CUDA build)
if "$T" info 2>/dev/null | grep -q '^CUDA '; then
  grep -q "device auto: estimated CPU .* the CPU (no GPU looked for)" "$out" ||
    { echo "FAIL explain auto note"; cat "$out"; fails=$((fails+1)); }
fi
# a tiny memory limit: the partial groups spill to --temp-dir, the same answer, nothing left there
mkdir "$d/tmp"
check spill 0 "$T" groupby "$d/t.csv" --by k --agg 'sum(v),count()' --memory-limit 1K --temp-dir "$d/tmp" --threads 2
same spill-out "$out" "$want"
[ -z "$(ls -A "$d/tmp")" ] || { echo "FAIL spill left files"; ls -R "$d/tmp"; fails=$((fails+1)); }
# a result over the limit: spilled by key range and written piece by piece, byte for byte the
# in-memory answer (also with a holistic aggregation); a spill folder that cannot be made (no such
# --temp-dir) is exit 2 with no output file
"$T" gen groupby --rows 20000 --k 10 --nas 5 --out "$d/g.csv" >/dev/null
for agg in 'sum(v3),count()' 'median(v3),count()'; do
  check "whole $agg" 0 "$T" groupby "$d/g.csv" --by id1,id2,id3,id4,id5,id6 --agg "$agg" --out "$d/whole.csv"
  check "ranges $agg" 0 "$T" groupby "$d/g.csv" --by id1,id2,id3,id4,id5,id6 --agg "$agg" --out "$d/ranges.csv" \
    --memory-limit 1K --temp-dir "$d/tmp" --threads 2 --explain
  grep -q "key ranges" "$out" || { echo "FAIL ranges $agg explain"; cat "$out"; fails=$((fails+1)); }
  cmp "$d/whole.csv" "$d/ranges.csv" || { echo "FAIL ranges $agg: output differs"; fails=$((fails+1)); }
  [ -z "$(ls -A "$d/tmp")" ] || { echo "FAIL ranges $agg left files"; ls -R "$d/tmp"; fails=$((fails+1)); }
done
check no-temp-dir 2 "$T" groupby "$d/g.csv" --by id1,id2,id3,id4,id5,id6 --agg 'sum(v3)' --out "$d/none.csv" \
  --memory-limit 1K --temp-dir "$d/absent"
[ ! -e "$d/none.csv" ] || { echo "FAIL no-temp-dir left an output"; fails=$((fails+1)); }
exit $((fails > 0))
