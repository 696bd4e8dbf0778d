# Shared by the CLI test scripts (sourced, not run): `check NAME EXPECTED_CODE CMD...` runs CMD,
# keeps its output in $out, compares its exit code and counts failures in $fails.
fails=0
out=$(mktemp /tmp/tandem-cli.XXXXXX)
trap 'rm -f "$out"' EXIT
check() {
  local name=$1 want=$2; shift 2
  "$@" >"$out" 2>&1
  local got=$?
  if [ "$got" != "$want" ]; then
    echo "FAIL $name: exit $got, expected $want"; cat "$out"; fails=$((fails+1))
  else
    echo "ok   $name"
  fi
}
same() {  # same NAME FILE EXPECTED_TEXT
  if [ "$(cat "$2")" != "$3" ]; then echo "FAIL $1: got"; cat "$2"; fails=$((fails+1)); else echo "ok   $1"; fi
}
