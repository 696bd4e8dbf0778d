#!/usr/bin/env bash
# tandem sort's table form under --memory-limit: a file over the limit is sorted by runs in
# --temp-dir and merged, with the same output as the in-memory sort (also for quoted fields); the temporary folder is
# empty afterwards, also after malformed input (exit 2, no output file); size suffixes parse;
# the array form refuses the flags.
set -u
T=$1
source "$(dirname "$0")/lib.bash"
temp_dir d
mkdir "$d/tmp"
"$T" gen groupby --rows 20000 --k 100 --nas 5 --out "$d/g.csv" >/dev/null 2>&1 || { echo "FAIL gen"; exit 1; }
for by in id3 id1,id2,v3:desc v3 id6:desc,id3; do
  check "in-memory $by" 0 "$T" sort "$d/g.csv" --by "$by" --out "$d/want.csv" --threads 2
  check "runs $by" 0 "$T" sort "$d/g.csv" --by "$by" --out "$d/got.csv" --threads 2 --memory-limit 64K \
    --temp-dir "$d/tmp" --explain
  grep -q "sorted by runs" "$out" && grep -q "merge runs" "$out" || fail "runs $by: --explain names no runs"
  cmp -s "$d/want.csv" "$d/got.csv" || fail "runs $by: another output"
  [ -z "$(ls -A "$d/tmp")" ] || fail "runs $by left $(ls "$d/tmp")"
done
check "runs nulls first limit" 0 "$T" sort "$d/g.csv" --by v1:desc,id4 --nulls first --limit 1000 \
  --out "$d/got.csv" --memory-limit 64K --temp-dir "$d/tmp"
"$T" sort "$d/g.csv" --by v1:desc,id4 --nulls first --limit 1000 --out "$d/want.csv" 2>/dev/null
cmp -s "$d/want.csv" "$d/got.csv" || fail "runs nulls first limit: another output"
# a byte order mark, CRLF, quoted line breaks and delimiters, literal quotes in unquoted fields
python3 - "$d/q.csv" <<'PY'
import random, sys
random.seed(5)
rows = ["\ufeffname,val,note"]
for i in range(3000):
    n = random.choice(["a", "b", '"x\ny"', '"q,""r"""', "37°36'37.8\"N", ""])
    rows.append(f"{n},{random.choice(['1', '2.5', '', 'nan', '-0'])},{i}")
open(sys.argv[1], "w", newline="").write("\r\n".join(rows) + "\r\n")
PY
for by in name val:desc name,val; do
  "$T" sort "$d/q.csv" --by "$by" --out "$d/want.csv" 2>/dev/null
  check "quoted runs $by" 0 "$T" sort "$d/q.csv" --by "$by" --out "$d/got.csv" --memory-limit 8K --temp-dir "$d/tmp" --explain
  grep -q "sorted by runs" "$out" || fail "quoted runs $by: no runs"
  cmp -s "$d/want.csv" "$d/got.csv" || fail "quoted runs $by: another output"
done
check "suffix fits" 0 "$T" sort "$d/g.csv" --by id3 --out "$d/got.csv" --memory-limit 1G --explain
grep -q "sorted in memory" "$out" || fail "suffix fits: not sorted in memory"
{ head -5000 "$d/g.csv"; echo "id001,id002"; tail -n +5001 "$d/g.csv"; } >"$d/bad.csv"
check_apart "malformed" 2 "$T" sort "$d/bad.csv" --by id3 --out "$d/bad-out.csv" --memory-limit 64K --temp-dir "$d/tmp"
grep -q "bad.csv:5001" "$err" || fail "malformed: no file:line in $(cat "$err")"
[ ! -e "$d/bad-out.csv" ] || fail "malformed: output left"
[ -z "$(ls -A "$d/tmp")" ] || fail "malformed left $(ls "$d/tmp")"
check "missing temp dir" 2 "$T" sort "$d/g.csv" --by id3 --out "$d/x.csv" --memory-limit 64K --temp-dir "$d/absent"
[ ! -e "$d/x.csv" ] || fail "missing temp dir: output left"
check "bad limit" 2 "$T" sort "$d/g.csv" --by id3 --out "$d/x.csv" --memory-limit lots
check "array form" 2 "$T" sort --type u32 --in "$d/g.csv" --out "$d/x.bin" --memory-limit 1G
[ $fails -eq 0 ]
