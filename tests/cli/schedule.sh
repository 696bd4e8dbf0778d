#!/usr/bin/env bash
# tandem schedule: drawing orders, JSON orders, the static selector, and exit codes.
set -u
T=$1
source "$(dirname "$0")/lib.bash"
expect() {  # expect NAME EXPECTED_OUTPUT CMD...
  local name=$1 want=$2; shift 2
  local got
  got=$("$@" 2>&1)
  if [ "$got" != "$want" ]; then
    echo "FAIL $name: got"; echo "$got"; echo "expected"; echo "$want"; fails=$((fails+1))
  else
    echo "ok   $name"
  fi
}
expect show-zigzag "$(printf '0 1 2\n5 4 3')" "$T" schedule --show 3x2 --style zigzag
expect show-one "0" "$T" schedule --show 1x1 --style hilbert
expect show-tiled "$(printf ' 0  1  4  5  8\n 2  3  6  7  9\n10 11 12 13 14')" "$T" schedule --show 5x3 --style tiled:2x2
expect json-colmajor "[[0, 0], [0, 1], [1, 0], [1, 1]]" "$T" schedule --show 2x2 --style strided:2:1 --json
# Every style's JSON order is a permutation of the grid.
for s in sequential zigzag hilbert tiled:3x2 strided:5:3; do
  "$T" schedule --show 13x7 --style $s --json | python3 -c '
import json,sys
o=json.load(sys.stdin)
assert len(o)==91 and sorted(map(tuple,o))==[(x,y) for x in range(13) for y in range(7)], "not a permutation"' \
    && echo "ok   json-perm-$s" || { echo "FAIL json-perm-$s"; fails=$((fails+1)); }
done
check unknown-style 2 "$T" schedule --show 4x4 --style morton
grep -q "morton" $out || { echo "FAIL unknown-style message"; fails=$((fails+1)); }
check tile-too-big 2 "$T" schedule --show 4x4 --style tiled:8x2
grep -q "does not fit" $out || { echo "FAIL tile-too-big message"; fails=$((fails+1)); }
check stride-too-big 2 "$T" schedule --show 2x2 --style strided:9:1
check bad-grid 2 "$T" schedule --show 0x4 --style zigzag
check bad-grid2 2 "$T" schedule --show 4 --style zigzag
check show-needs-style 2 "$T" schedule --show 4x4
check too-large-to-draw 2 "$T" schedule --show 1000x1000 --style zigzag
check nothing 2 "$T" schedule
check unknown-kernel 2 "$T" schedule --kernel gemm --size 1024
check bad-size 2 "$T" schedule --kernel matmul --size 1000
check no-size 2 "$T" schedule --kernel matmul
check bad-fraction 2 "$T" schedule --kernel matmul --size 1024 --profile-fraction 0.9
check static 0 "$T" schedule --kernel matmul --size 4096 --style static --window 1056
grep -q "static choice for matmul" $out || { echo "FAIL static output"; fails=$((fails+1)); }
grep -q "<- static choice" $out || { echo "FAIL static mark"; fails=$((fails+1)); }
check signal-ipc-fixed-style 2 "$T" schedule --kernel matmul --size 1024 --signal ipc --style hilbert
grep -q "signal ipc chooses among schedules" $out || { echo "FAIL signal-ipc-fixed-style message"; fails=$((fails+1)); }
check signal-unknown 2 "$T" schedule --kernel matmul --size 1024 --signal power
check energy-span-zero 2 "$T" schedule --kernel matmul --size 1024 --signal energy --energy-span-ms 0
grep -q -- "--energy-span-ms" $out || { echo "FAIL energy-span-zero message"; fails=$((fails+1)); }
check signal-fixed-style 2 "$T" schedule --kernel matmul --size 1024 --signal energy --style zigzag
grep -q "goes with --style auto" $out || { echo "FAIL signal-fixed-style message"; fails=$((fails+1)); }
if "$T" info --json | python3 -c 'import json,sys; sys.exit(0 if json.load(sys.stdin)["gpus"] else 1)'; then
  # Energy as the signal: both picks and their costs; where NVML cannot be read, time chooses and says why.
  check run-energy 0 "$T" schedule --kernel copy-col --size 2048 --signal energy
  grep -q "^time picks " $out || { echo "FAIL run-energy: no time pick"; fails=$((fails+1)); }
  grep -q "^chosen by \(energy\|time\): " $out || { echo "FAIL run-energy: no choice"; fails=$((fails+1)); }
  if grep -q "energy not read" $out; then
    grep -q "chose by time" $out || { echo "FAIL run-energy: fallback to time not said"; fails=$((fails+1)); }
  else
    grep -q "energy picks .*: \(the same schedule\|different schedules\)" $out \
      || { echo "FAIL run-energy: no energy pick"; fails=$((fails+1)); }
  fi
  grep -q "^output: identical\|^output: max relative error\|^output: reference" $out \
    || { echo "FAIL run-energy: output not checked"; fails=$((fails+1)); }
  # IPC as the signal: its pick beside time's and energy's, with the IPC pick's time and energy; where
  # the counters cannot be read, time chooses and says why.
  check run-ipc 0 "$T" schedule --kernel copy-col --size 2048 --signal ipc
  grep -q "^time picks " $out || { echo "FAIL run-ipc: no time pick"; fails=$((fails+1)); }
  if grep -q "IPC not read" $out; then
    grep -q "IPC could not be read .*chose by time" $out || { echo "FAIL run-ipc: fallback not said"; fails=$((fails+1)); }
    grep -q "^chosen by time: " $out || { echo "FAIL run-ipc: fallback not by time"; fails=$((fails+1)); }
  else
    grep -q "  IPC [0-9]" $out || { echo "FAIL run-ipc: no IPC column"; fails=$((fails+1)); }
    grep -q "; ipc picks .* ([^,]*, [^)]*): \(the same schedule\|different schedules\)" $out \
      || { echo "FAIL run-ipc: no ipc pick"; fails=$((fails+1)); }
    grep -q "^chosen by ipc: " $out || { echo "FAIL run-ipc: not chosen by ipc"; fails=$((fails+1)); }
  fi
  grep -q "^output: identical\|^output: max relative error\|^output: reference" $out \
    || { echo "FAIL run-ipc: output not checked"; fails=$((fails+1)); }
  check run-auto 0 "$T" schedule --kernel copy-row --size 1024 --no-cache --explain
  check run-style 0 "$T" schedule --kernel conv11 --size 512 --style hilbert
  check run-exhaustive 0 "$T" schedule --kernel intimg-col --size 512 --exhaustive
else
  check needs-gpu 1 "$T" schedule --kernel matmul --size 1024
  grep -q "needs a GPU" $out || { echo "FAIL needs-gpu message"; fails=$((fails+1)); }
  check needs-gpu-style 1 "$T" schedule --kernel copy-col --size 1024 --style tiled:4x4
  check needs-gpu-energy 1 "$T" schedule --kernel copy-col --size 1024 --signal energy
  check needs-gpu-ipc 1 "$T" schedule --kernel copy-col --size 1024 --signal ipc
fi
check demo 0 "$T" demo --only "block schedules"
[ $fails -eq 0 ]
