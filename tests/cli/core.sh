#!/usr/bin/env bash
# The CLI's foundation: help, info, exit codes for bad usage.
set -u
T=$1
source "$(dirname "$0")/lib.bash"
check help 0 "$T" --help
check info 0 "$T" info
check info-json 0 "$T" info --json
"$T" info --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["cpu"]["physical_cores"]>=1' \
  || { echo "FAIL info-json content"; fails=$((fails+1)); }
check no-subcommand 2 "$T"
check unknown-subcommand 2 "$T" frobnicate
check unknown-option 2 "$T" info --frob
check calibrate-bad-size 2 "$T" calibrate --mib 0
check calibrate-small 0 "$T" calibrate --mib 8 --repetitions 1 --no-tune
check demo-unknown-part 2 "$T" demo --only no-such-part
[ $fails -eq 0 ]
