#!/usr/bin/env bash
# What the library reports and the CLI prints: the library writes nothing to stderr itself; the
# CLI prints the tuning cache's warnings (here: a corrupt cache file) and still succeeds.
set -u
T=$1
source "$(dirname "$0")/lib.bash"
temp_dir d
export XDG_CACHE_HOME="$d/cache"
mkdir -p "$XDG_CACHE_HOME/tandem"
echo '{ not json' > "$XDG_CACHE_HOME/tandem/tuning.json"
python3 -c 'import struct, sys; sys.stdout.buffer.write(struct.pack("<5I", 5, 3, 9, 1, 7))' > "$d/k.u32"
check corrupt-cache 0 "$T" sort --type u32 --in "$d/k.u32" --out "$d/s.u32"
grep -q "tuning cache .* is corrupt" $out || { echo "FAIL corrupt-cache warning on stderr"; cat $out; fails=$((fails+1)); }
[ "$(grep -c "is corrupt" $out)" = 1 ] || { echo "FAIL corrupt-cache warning printed once"; cat $out; fails=$((fails+1)); }
# A CPU sort leaves the cache alone: its entries are keyed by the GPU, and probing one costs a CUDA
# context (about a third of a second per run on an H100 host).
check cpu-sort-no-cache 0 "$T" sort --type u32 --in "$d/k.u32" --out "$d/s.u32" --device cpu --threads 2
grep -q "tuning cache" $out && { echo "FAIL sort --device cpu read the tuning cache"; cat $out; fails=$((fails+1)); }
[ $fails -eq 0 ]
