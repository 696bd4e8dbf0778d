# Shared by the CLI test scripts (sourced, not run): `check NAME EXPECTED_CODE CMD...` runs CMD,
# keeps its output in $out, compares its exit code and counts failures in $fails; `temp_dir VAR`
# gives the script a folder of its own, removed on exit.
fails=0
out=$(mktemp /tmp/tandem-cli.XXXXXX)
err=$out.err
removed_on_exit=("$out" "$err")
trap 'rm -rf "${removed_on_exit[@]}"' EXIT
temp_dir() {  # temp_dir VAR: VAR names a fresh folder /tmp/tandem-cli-SCRIPT.XXXXXX
  local dir
  dir=$(mktemp -d "/tmp/tandem-cli-$(basename "$0" .sh).XXXXXX") || { echo "FAIL mktemp -d"; exit 1; }
  removed_on_exit+=("$dir")
  printf -v "$1" '%s' "$dir"
}
fail() {  # fail WHAT: counts a failure
  echo "FAIL $1"; fails=$((fails+1))
}
counted() {  # counted NAME EXPECTED_CODE CODE FILE...: ok, or FAIL showing FILE...
  local name=$1 want=$2 got=$3; shift 3
  if [ "$got" != "$want" ]; then
    echo "FAIL $name: exit $got, expected $want"; cat "$@"; fails=$((fails+1))
  else
    echo "ok   $name"
  fi
}
check() {  # check NAME EXPECTED_CODE CMD...: CMD's stdout and stderr together in $out
  local name=$1 want=$2; shift 2
  "$@" >"$out" 2>&1
  counted "$name" "$want" $? "$out"
}
check_apart() {  # check_apart NAME EXPECTED_CODE CMD...: CMD's stdout in $out, its stderr in $err
  local name=$1 want=$2; shift 2
  "$@" >"$out" 2>"$err"
  counted "$name" "$want" $? "$out" "$err"
}
same() {  # same NAME FILE EXPECTED_TEXT
  if [ "$(cat "$2")" != "$3" ]; then echo "FAIL $1: got"; cat "$2"; fails=$((fails+1)); else echo "ok   $1"; fi
}
# Whether two CSV answers agree: the same rows and cells, numbers within 1e-9 relative (float
# sums and means may round differently when threads add chunks in another order). Plain commas
# only (no quoted fields).
same_numbers() {  # same_numbers FILE_A FILE_B
  awk -F, 'function differ() { bad = 1; exit }
    NR == FNR { a[FNR] = $0; n = FNR; next }
    { if (!(FNR in a)) differ(); split(a[FNR], x, ","); if (length(x) != NF) differ()
      for (i = 1; i <= NF; ++i) {
        if (x[i] == $i) continue
        if (x[i] !~ /^-?[0-9.eE+-]+$/ || $i !~ /^-?[0-9.eE+-]+$/) differ()
        d = x[i] - $i; m = (x[i] < 0 ? -x[i] : x[i]); if (d < 0) d = -d
        if (d > 1e-9 * (m > 1 ? m : 1)) differ()
      }
      rows = FNR }
    END { exit (bad || rows != n) }' "$1" "$2"
}
