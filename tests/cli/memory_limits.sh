#!/usr/bin/env bash
# The CSV group-by under a sweep of address-space limits (ulimit -v): every run ends with exit 0
# and the right answer, or exit 1 saying it ran out of memory; never a signal (an exception that
# left an OpenMP region aborted with SIGABRT), never exit 2, never a file left behind.
set -u
T=$1
source "$(dirname "$0")/lib.bash"
temp_dir d
export LC_ALL=C
# AddressSanitizer reserves terabytes of address space at start: no ulimit -v sweep there.
if ldd "$T" 2>/dev/null | grep -q libasan; then echo "skipped: an AddressSanitizer build cannot run under ulimit -v"; exit 0; fi

"$T" gen groupby --rows 200000 --k 50 --nas 5 --out "$d/g.csv" >/dev/null 2>&1 || { echo "FAIL gen"; exit 1; }
run() {  # run LIMIT_KB OUT: the group-by under the limit
  bash -c 'ulimit -v "$1"; exec "$2" groupby "$3" --by id1,id3 --agg "sum(v1),mean(v3),median(v2),count()" --device cpu --threads 2 --out "$4"' \
    _ "$1" "$T" "$d/g.csv" "$2"
}
run unlimited "$d/want.csv" >"$out" 2>&1 || { echo "FAIL the unlimited run"; cat "$out"; exit 1; }
for limit in 50000 70000 85000 100000 130000 400000; do
  rm -f "$d/got.csv"
  run "$limit" "$d/got.csv" >"$out" 2>&1
  rc=$?
  if [ "$rc" = 127 ] && ! bash -c 'ulimit -v "$1"; exec "$2" --version' _ "$limit" "$T" >/dev/null 2>&1; then
    echo "ok   limit $limit KB: below what the program needs to start"
  elif [ "$rc" = 0 ]; then
    if same_numbers "$d/want.csv" "$d/got.csv"; then echo "ok   limit $limit KB: exit 0, the same answer"
    else echo "FAIL limit $limit KB: exit 0 with another answer"; fails=$((fails+1)); fi
  elif [ "$rc" = 1 ] && grep -q -e "out of memory" -e "libgomp: Thread creation failed" "$out"; then
    echo "ok   limit $limit KB: exit 1 ($(head -c 120 "$out" | tr '\n' ' '))"
    [ ! -e "$d/got.csv" ] || { echo "FAIL limit $limit KB: exit 1 left the output"; fails=$((fails+1)); }
  else
    echo "FAIL limit $limit KB: exit $rc"; cat "$out"; fails=$((fails+1))
  fi
  leftovers=$(ls "$d" | grep -v -e '^g.csv$' -e '^want.csv$' -e '^got.csv$')
  [ -z "$leftovers" ] || { echo "FAIL limit $limit KB left $leftovers"; fails=$((fails+1)); rm -f "$d"/*.tmp-*; }
done
[ $fails -eq 0 ]
