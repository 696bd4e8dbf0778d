#!/usr/bin/env bash
# The tuning cache as the commands read it back: every entry they stored is replaced by a
# malformed one (not an object, a field missing, of the wrong type, out of range); the commands
# still succeed with the same results, say so under --explain, and store well-formed entries again.
# With a GPU more readers take part (bitonic GPU shape and k, hash group-by, staged transfers).
set -u
T=$1
source "$(dirname "$0")/lib.bash"
temp_dir D
export XDG_CACHE_HOME=$D/cache
C=$D/cache/tandem/tuning.json

info=$("$T" info --json)
cores=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["cpu"]["physical_cores"])' <<<"$info")
gpu=$(python3 -c 'import json,sys; print(1 if json.load(sys.stdin)["gpus"] else 0)' <<<"$info")
n=200000
[ "$gpu" = 1 ] && n=4200000  # the hash group-by tunes (and caches) from 2^22 records
"$T" gen zipf --n $n --distinct 5000 --out "$D/k.u32" --values "$D/v.i64" --value-type i64 >/dev/null || fail gen

# Every command that reads or writes the cache; results in $D/TAG.*, --explain text in $D/TAG.*.txt.
run_all() {
  local tag=$1
  "$T" sort --type u32 --in "$D/k.u32" --out "$D/$tag.bitonic" --algorithm bitonic --threads $((2 * cores + 1)) \
    --explain >"$D/$tag.bitonic.txt" 2>&1 || { fail "$tag: bitonic sort"; cat "$D/$tag.bitonic.txt"; }
  "$T" sort --type u32 --in "$D/k.u32" --out "$D/$tag.auto" --explain >"$D/$tag.auto.txt" 2>&1 \
    || { fail "$tag: sort"; cat "$D/$tag.auto.txt"; }
  "$T" groupby --keys "$D/k.u32" --values "$D/v.i64" --value-type i64 --agg sum,count,min,max --out "$D/$tag.csv" \
    --explain 2>"$D/$tag.groupby.txt" || { fail "$tag: groupby"; cat "$D/$tag.groupby.txt"; }
  if [ "$gpu" = 1 ]; then
    "$T" schedule --kernel copy-row --size 1024 --explain >"$D/$tag.schedule.txt" 2>&1 || fail "$tag: schedule"
  fi
  # Last: the sorts above read its (malformed) entry before it is stored again.
  "$T" calibrate --mib 4 --repetitions 1 >"$D/$tag.calibrate.txt" 2>&1 || { fail "$tag: calibrate"; cat "$D/$tag.calibrate.txt"; }
}

run_all good
cp "$C" "$D/good.json"
python3 - "$D/good.json" <<'PY' || fail "the commands stored tuning entries"
import json, sys
e = json.load(open(sys.argv[1]))["entries"]
assert any(k.startswith("bitonic.cpu_threads|") for k in e), list(e)
assert any(k.startswith("calibrate|") for k in e), list(e)
PY

for kind in number array null empty strings negative; do
  python3 - "$D/good.json" "$D/bad.json" "$kind" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
kind = sys.argv[3]
def bad(v):
    if kind == "number": return 42
    if kind == "array": return [1, "x"]
    if kind == "null": return None
    if kind == "empty": return {}
    if not isinstance(v, dict): return "x"
    if kind == "strings": return {k: str(x) for k, x in v.items()}
    # negative: numbers below zero, text where a number or flag was, numbers where text was
    return {k: (-abs(x) - 1 if isinstance(x, (int, float)) and not isinstance(x, bool)
                else 12345 if isinstance(x, str) else "yes") for k, x in v.items()}
doc["entries"] = {k: bad(v) for k, v in doc["entries"].items()}
json.dump(doc, open(sys.argv[2], "w"))
PY
  cp "$D/bad.json" "$C"
  run_all "$kind"
  for out in bitonic auto csv; do
    cmp -s "$D/good.$out" "$D/$kind.$out" || fail "$kind: $out differs from the run with a good cache"
  done
  grep -q "is malformed" "$D/$kind.bitonic.txt" || fail "$kind: --explain notes the malformed entry"
  # Every entry a command read again is stored again, well-formed (measurements may pick another
  # problem class, e.g. a thread count, leaving some entries unread: those stay as they were).
  cat "$D/$kind".*.txt >"$D/notes"
  python3 - "$D/good.json" "$D/bad.json" "$C" "$D/notes" <<'PY' || fail "$kind: entries read are stored again, well-formed"
import json, re, sys
good = json.load(open(sys.argv[1]))["entries"]
bad = json.load(open(sys.argv[2]))["entries"]
now = json.load(open(sys.argv[3]))["entries"]
reported = set(re.findall(r"entry (.+?) is malformed \(", open(sys.argv[4]).read()))
assert reported, "no entry reported malformed"
for k in reported:
    assert k in bad and now.get(k) != bad[k], ("reported but not stored again", k)
for k, v in good.items():
    assert k in now, ("missing", k)
    w = now[k]
    if w == bad[k] and k not in reported:
        continue
    assert type(w) is type(v), (k, w)
    if isinstance(v, dict):
        assert set(w) == set(v), (k, w)
        for f in v:
            num = lambda x: isinstance(x, (int, float)) and not isinstance(x, bool)
            assert type(w[f]) is type(v[f]) or num(v[f]) and num(w[f]), (k, f, w[f])
            if num(v[f]):
                assert w[f] >= 0, (k, f, w[f])
PY
done
[ $fails -eq 0 ]
