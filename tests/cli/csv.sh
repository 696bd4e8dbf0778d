#!/usr/bin/env bash
# gen groupby: the db-benchmark data as CSV, its options, and exit 2 without output for bad ones.
set -u
T=$1
source "$(dirname "$0")/lib.bash"
temp_dir d
export LC_ALL=C

check gen-groupby 0 "$T" gen groupby --rows 1000 --k 10 --out "$d/g.csv"
[ "$(head -1 "$d/g.csv")" = "id1,id2,id3,id4,id5,id6,v1,v2,v3" ] || { echo "FAIL gen-groupby header"; fails=$((fails+1)); }
[ "$(wc -l <"$d/g.csv")" = "1001" ] || { echo "FAIL gen-groupby rows"; fails=$((fails+1)); }
ids=$(tail -n +2 "$d/g.csv" | cut -d, -f1 | sort -u | wc -l)
[ "$ids" -le 10 ] && [ "$ids" -ge 8 ] || { echo "FAIL gen-groupby id1 distinct: $ids"; fails=$((fails+1)); }
tail -n +2 "$d/g.csv" | awk -F, '$7 < 1 || $7 > 5 || $8 < 1 || $8 > 15 || $9 < 0 || $9 > 100 || length($3) != 12 || $3 !~ /^id[0-9]+$/ {bad=1} END {exit bad}' \
  || { echo "FAIL gen-groupby value ranges"; fails=$((fails+1)); }

check gen-groupby-same-seed 0 "$T" gen groupby --rows 1000 --k 10 --seed 1 --out "$d/g1.csv"
cmp -s "$d/g.csv" "$d/g1.csv" || { echo "FAIL gen-groupby same seed, same file"; fails=$((fails+1)); }
check gen-groupby-other-seed 0 "$T" gen groupby --rows 1000 --k 10 --seed 2 --out "$d/g2.csv"
cmp -s "$d/g.csv" "$d/g2.csv" && { echo "FAIL gen-groupby other seed, same file"; fails=$((fails+1)); }

check gen-groupby-nas 0 "$T" gen groupby --rows 2000 --k 10 --nas 20 --out "$d/n.csv"
grep -q ',,' "$d/n.csv" || { echo "FAIL gen-groupby --nas: no empty fields"; fails=$((fails+1)); }
check gen-groupby-sorted 0 "$T" gen groupby --rows 2000 --k 5 --sorted --out "$d/s.csv"
tail -n +2 "$d/s.csv" | cut -d, -f1,2 | sort -c || { echo "FAIL gen-groupby --sorted"; fails=$((fails+1)); }
check gen-groupby-tab 0 "$T" gen groupby --rows 10 --k 2 --delimiter '\t' --out "$d/t.tsv"
[ "$(head -1 "$d/t.tsv")" = "$(printf 'id1\tid2\tid3\tid4\tid5\tid6\tv1\tv2\tv3')" ] || { echo "FAIL gen-groupby tab header"; fails=$((fails+1)); }
check gen-groupby-stdout 0 "$T" gen groupby --rows 5 --k 2 --out -
[ "$(wc -l <"$out")" = "6" ] || { echo "FAIL gen-groupby to stdout"; fails=$((fails+1)); }

for bad in "--rows 0" "--rows -5" "--k 0" "--k -1" "--nas 101" "--nas -1" "--delimiter ;" "--rows 3000000000"; do
  # shellcheck disable=SC2086
  check "gen-groupby-bad $bad" 2 "$T" gen groupby $bad --out "$d/bad.csv"
  [ -e "$d/bad.csv" ] && { echo "FAIL gen-groupby $bad wrote a file"; fails=$((fails+1)); rm -f "$d/bad.csv"; }
done
check gen-groupby-no-out 2 "$T" gen groupby --rows 5
check gen-groupby-bad-dir 2 "$T" gen groupby --rows 5 --out "$d/none/g.csv"
[ -z "$(ls "$d" | grep tmp)" ] || { echo "FAIL temporary files left"; ls "$d"; fails=$((fails+1)); }
[ $fails -eq 0 ]
