#!/usr/bin/env bash
# One CSV dialect for both readers: `sort FILE.csv` (the table reader) and `groupby FILE.csv` (the
# streaming scan) read a quote inside an unquoted field as a literal byte and keep values with
# leading zeros (zip codes) as text (the sort writes its records as they were read); a byte after a closing quote is exit 2 naming file, line and
# column, with no output file; a column with no value is i64 (its sum is missing) in both.
set -u
T=$1
source "$(dirname "$0")/lib.bash"
d=$(mktemp -d)
trap 'rm -rf "$d" "$out"' EXIT
export LC_ALL=C

cat >"$d/t.csv" <<'EOF'
place,zip,n
37°36'37.8"N 121°2'17.9"W,08123,2
ab"c,00501,1
"x""y",10001,3
EOF
for threads in 1 2; do
  check sort-$threads 0 "$T" sort "$d/t.csv" --by n --threads "$threads" --out "$d/s.csv"
  same sort-$threads-out "$d/s.csv" "$(cat <<'EOF'
place,zip,n
ab"c,00501,1
37°36'37.8"N 121°2'17.9"W,08123,2
"x""y",10001,3
EOF
)"
  check groupby-zip-$threads 0 "$T" groupby "$d/t.csv" --by zip --agg 'sum(n)' --threads "$threads" --device cpu
  same groupby-zip-$threads-out "$out" "$(printf 'zip,sum_n\n00501,1\n08123,2\n10001,3')"
  check groupby-place-$threads 0 "$T" groupby "$d/t.csv" --by place --agg 'sum(n)' --threads "$threads" --device cpu
  same groupby-place-$threads-out "$out" "$(cat <<'EOF'
place,sum_n
"37°36'37.8""N 121°2'17.9""W",2
"ab""c",1
"x""y",3
EOF
)"
done
# The sorted file reads back the same: quotes and zeros survive the round trip.
check round-trip 0 "$T" sort "$d/s.csv" --by n --out "$d/s2.csv"
cmp -s "$d/s.csv" "$d/s2.csv" || { echo "FAIL round-trip differs"; fails=$((fails+1)); }

printf 'a,b\nx"y,1\n1,"ab"c\n' >"$d/bad.csv"
check sort-after-quote 2 "$T" sort "$d/bad.csv" --by a --out "$d/none.csv"
grep -qF "bad.csv:3: column 2 ('b'): 'c' after a closing quote" "$out" || { echo "FAIL sort-after-quote: message"; cat "$out"; fails=$((fails+1)); }
[ ! -e "$d/none.csv" ] || { echo "FAIL sort-after-quote left an output"; fails=$((fails+1)); }
check groupby-after-quote 2 "$T" groupby "$d/bad.csv" --by a --agg 'count()' --device cpu --out "$d/none.csv"
grep -qF "bad.csv:3: column 2 ('b'): 'c' after a closing quote" "$out" || { echo "FAIL groupby-after-quote: message"; cat "$out"; fails=$((fails+1)); }
[ ! -e "$d/none.csv" ] || { echo "FAIL groupby-after-quote left an output"; fails=$((fails+1)); }

# A column with no value: i64 in both readers, every value missing.
printf 'k,v\nb,\na,\n' >"$d/empty.csv"
check sort-all-missing 0 "$T" sort "$d/empty.csv" --by k --out "$d/e.csv"
same sort-all-missing-out "$d/e.csv" "$(printf 'k,v\na,\nb,')"
check groupby-all-missing 0 "$T" groupby "$d/empty.csv" --by k --agg 'sum(v)' --device cpu
same groupby-all-missing-out "$out" "$(printf 'k,sum_v\na,\nb,')"

exit $((fails > 0))
