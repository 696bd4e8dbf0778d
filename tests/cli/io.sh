#!/usr/bin/env bash
# Files and options under hostile use, for every command: bad .npy headers, inputs that are not
# regular files, standard output that fails, outputs that are devices, FIFOs or links, two outputs
# of one command, numeric options out of range, signals mid-run, and the peak memory of a read.
set -u
T=$(readlink -f "$1")
source "$(dirname "$0")/lib.bash"
temp_dir D
expect_err() {  # expect_err NAME TEXT: the last check's output mentions TEXT
  grep -qF -- "$2" "$out" || { fail "$1: output lacks '$2'"; cat "$out"; }
}
no_library_text() {  # no raw C++ exception text reaches the user
  ! grep -qE "stoull|bad_array_new_length|std::bad_alloc|max_size\(\)|Illegal seek|regex" "$out" || { fail "$1: raw library text"; cat "$out"; }
}
no_temps() {  # no temporary output file left in $D
  ! ls "$D" | grep -q '\.tmp-' || { fail "$1: temporary file left: $(ls "$D" | grep '\.tmp-')"; }
}

python3 - "$D" <<'EOF'
import struct, sys
d = sys.argv[1]
def npy(name, header, data=b""):
    h = header + " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    open(f"{d}/{name}", "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() + data)
keys = [7, 3, 9, 1, 3]
open(f"{d}/k.u32", "wb").write(struct.pack("<5I", *keys))
open(f"{d}/v.u32", "wb").write(struct.pack("<5I", *range(5)))
npy("k.npy", "{'descr': '<u4', 'fortran_order': False, 'shape': (5,), }", struct.pack("<5I", *keys))
npy("long.npy", "{'descr': '<u4', 'fortran_order': False, 'shape': (1,), 'x': '" + "a" * 27000 + "'}", b"abcd")
npy("wrap.npy", "{'descr': '<u4', 'fortran_order': False, 'shape': (4611686018427387904,), }")
npy("wrap8.npy", "{'descr': '<u8', 'fortran_order': False, 'shape': (2305843009213693952,), }")
npy("huge.npy", "{'descr': '<u4', 'fortran_order': False, 'shape': (123456789012345678901234567890,), }")
npy("neg.npy", "{'descr': '<u4', 'fortran_order': False, 'shape': (-2,), }", b"\0" * 8)
EOF
printf 'the cat and the dog\n' >"$D/a.txt"
# Devices are reached through links in $D: a regression replaces the link, never the system's device.
ln -s /dev/null "$D/null-link"
ln -s /dev/full "$D/full"

# --- 1, 2: hostile .npy headers: exit 2 naming the file, no crash, no output, no temporary -----------
check npy-long-field-sort 2 "$T" sort --type u32 --in "$D/long.npy" --out "$D/o.u32"
expect_err npy-long-field-sort "$D/long.npy: not a valid .npy file: byte "
check npy-long-field-groupby 2 "$T" groupby --keys "$D/long.npy" --agg count --out "$D/o.csv"
expect_err npy-long-field-groupby "$D/long.npy: not a valid .npy file"
for alg in radix merge bitonic; do
  check "npy-wrapping-shape-$alg" 2 "$T" sort --type u32 --in "$D/wrap.npy" --out "$D/o.npy" --algorithm $alg --device cpu
  expect_err "npy-wrapping-shape-$alg" "more than a 64-bit size can hold"
  no_library_text "npy-wrapping-shape-$alg"
done
check npy-wrapping-shape-u64 2 "$T" sort --type u64 --in "$D/wrap8.npy" --out "$D/o.npy"
check npy-wrapping-shape-groupby 2 "$T" groupby --keys "$D/wrap.npy" --agg count --out "$D/o.csv"
check npy-30-digit-shape 2 "$T" sort --type u32 --in "$D/huge.npy" --out "$D/o.npy"
expect_err npy-30-digit-shape "$D/huge.npy: not a valid .npy file: byte 61: dimension 123456789012345678901234567890 does not fit in 64 bits"
no_library_text npy-30-digit-shape
check npy-30-digit-shape-groupby 2 "$T" groupby --keys "$D/huge.npy" --agg count
check npy-negative-shape 2 "$T" groupby --keys "$D/neg.npy" --agg count --out "$D/o.csv"
expect_err npy-negative-shape "negative dimension -2"
[ -e "$D/o.u32" ] || [ -e "$D/o.npy" ] || [ -e "$D/o.csv" ] && fail "a bad header left an output file"
no_temps npy-headers

# --- 3: results on standard output that cannot be written: exit 1 and a message ---------------------
"$T" gen topk --objects 200 --lists 2 --out "$D/l.tkl" 2>/dev/null
to_full() {
  check "$1 > /dev/full" 1 bash -c '"$@" > /dev/full' _ "${@:2}"
  expect_err "$1 > /dev/full" "standard output: write failed"
  [ "$(grep -c 'tandem: error' "$out")" = 1 ] || { fail "$1 > /dev/full: one error message"; cat "$out"; }
}
to_closed() { check "$1 >&-" 1 bash -c '"$@" >&-' _ "${@:2}"; expect_err "$1 >&-" "standard output: write failed"; }
to_full sort "$T" sort --type u32 --in "$D/k.u32" --out -
to_full sort-plan "$T" sort --plan --n 16 --k 0.6
to_full groupby "$T" groupby --keys "$D/k.u32" --agg count
to_full wordcount "$T" wordcount "$D/a.txt"
to_full topk "$T" topk --lists "$D/l.tkl" --k 3 --device cpu
to_full gen-zipf "$T" gen zipf --n 1000 --out -
to_full gen-text "$T" gen text --bytes 1000 --out -
to_full gen-topk "$T" gen topk --objects 100 --out -
to_full info "$T" info
to_full index "$T" index --dims 4x4x4
to_full schedule "$T" schedule --show 4x4 --style zigzag
to_closed sort "$T" sort --type u32 --in "$D/k.u32" --out -
to_closed topk "$T" topk --lists "$D/l.tkl" --k 3 --device cpu
to_closed info "$T" info
# With standard output closed, the output file must not take its number: the file holds exactly the
# result and the --explain text that had nowhere to go is an error.
check "sort --out file --explain >&-" 1 bash -c '"$@" >&-' _ "$T" sort --type u32 --in "$D/k.u32" --out "$D/s-closed.u32" --explain
cmp -s "$D/s-closed.u32" <(python3 -c 'import struct,sys; sys.stdout.buffer.write(struct.pack("<5I",1,3,3,7,9))') \
  || fail "output file holds exactly the sorted keys when stdout is closed"

# --- 5: outputs that are devices, FIFOs or links are written in place, never replaced ---------------
check out-link-to-dev-null 0 "$T" sort --type u32 --in "$D/k.u32" --out "$D/null-link"
[ -L "$D/null-link" ] || fail "the link to /dev/null was replaced by a regular file"
check out-link-to-dev-null-groupby 0 "$T" groupby --keys "$D/k.u32" --agg count --out "$D/null-link"
[ -L "$D/null-link" ] || fail "groupby replaced the link to /dev/null"
mkfifo "$D/out.fifo"
cat "$D/out.fifo" >"$D/from-fifo.u32" &
check out-fifo 0 "$T" sort --type u32 --in "$D/k.u32" --out "$D/out.fifo"
wait
[ -p "$D/out.fifo" ] || fail "the FIFO was replaced by a regular file"
[ "$(od -An -tu4 "$D/from-fifo.u32" | xargs)" = "1 3 3 7 9" ] || fail "the FIFO's reader got the sorted keys"
check out-dev-full 1 "$T" sort --type u32 --in "$D/k.u32" --out "$D/full"
expect_err out-dev-full "$D/full: write failed"
[ -L "$D/full" ] || fail "the link to /dev/full was replaced"
mkdir "$D/real" && printf 'old' >"$D/real/target.u32" && chmod 640 "$D/real/target.u32"
ln -s real/target.u32 "$D/file-link"
check out-link-to-file 0 "$T" sort --type u32 --in "$D/k.u32" --out "$D/file-link"
[ -L "$D/file-link" ] || fail "the link to a file was replaced"
[ "$(od -An -tu4 "$D/real/target.u32" | xargs)" = "1 3 3 7 9" ] || fail "the link's target holds the result"
[ "$(stat -c %a "$D/real/target.u32")" = 640 ] || fail "the target kept its permissions"
check out-directory 2 "$T" sort --type u32 --in "$D/k.u32" --out "$D/real"
expect_err out-directory "is a directory"
no_temps outputs

# --- 9: inputs that are not regular files are streamed to their end --------------------------------
sorted_ok() { [ "$(od -An -tu4 "$1" | xargs)" = "1 3 3 7 9" ] || fail "$2: sorted keys"; }
check in-process-substitution 0 bash -c '"$1" sort --type u32 --in <(cat "$2") --out "$3"' _ "$T" "$D/k.u32" "$D/s1.u32"
sorted_ok "$D/s1.u32" in-process-substitution
check in-dev-stdin-pipe 0 bash -c 'cat "$2" | "$1" sort --type u32 --in /dev/stdin --out "$3"' _ "$T" "$D/k.u32" "$D/s2.u32"
sorted_ok "$D/s2.u32" in-dev-stdin-pipe
check in-dash-pipe 0 bash -c 'cat "$2" | "$1" groupby --keys - --agg count --out "$3"' _ "$T" "$D/k.u32" "$D/g-pipe.csv"
[ "$(cat "$D/g-pipe.csv")" = "$(printf 'key,count\n1,1\n3,2\n7,1\n9,1')" ] || fail "in-dash-pipe: result"
mkfifo "$D/in.npy"
cat "$D/k.npy" >"$D/in.npy" &
check in-fifo-npy 0 "$T" sort --type u32 --in "$D/in.npy" --out "$D/s3.npy"
wait
[ "$(tail -c 20 "$D/s3.npy" | od -An -tu4 | xargs)" = "1 3 3 7 9" ] || fail "in-fifo-npy: sorted keys"
check in-proc-file 0 "$T" wordcount /proc/version --lowercase
expect_err in-proc-file "linux"
check in-topk-process-substitution 0 bash -c '"$1" topk --lists <(cat "$2") --k 2 --device cpu' _ "$T" "$D/l.tkl"
check in-wordcount-pipe 0 bash -c 'printf "b a b" | "$1" wordcount /dev/stdin "$2"' _ "$T" "$D/a.txt"
expect_err in-wordcount-pipe $'the\t2'
check in-directory 2 "$T" wordcount "$D"
expect_err in-directory "is a directory"

# --- 10, 11: two outputs of one command: distinct, and both appear or neither ------------------------
check same-out-and-values-out 2 "$T" sort --type u32 --in "$D/k.u32" --out "$D/X" --values "$D/v.u32" --values-out "$D/./X"
expect_err same-out-and-values-out "--out and --values-out name the same destination"
check same-out-through-link 2 bash -c 'cd "$2" && ln -sf X X-link && "$1" sort --type u32 --in k.u32 --out X --values v.u32 --values-out X-link' _ "$T" "$D"
check same-stdout 2 "$T" sort --type u32 --in "$D/k.u32" --out - --values "$D/v.u32" --values-out -
check gen-zipf-same-outputs 2 "$T" gen zipf --n 10 --out "$D/X" --values "$D/X"
[ -e "$D/X" ] && fail "a clash of outputs left X"
check values-out-fails 1 "$T" sort --type u32 --in "$D/k.u32" --out "$D/keys-half.u32" --values "$D/v.u32" --values-out "$D/full"
[ -e "$D/keys-half.u32" ] && fail "the keys output stayed behind when the values output failed"
check gen-zipf-values-fail 1 "$T" gen zipf --n 1000 --out "$D/zk-half.u32" --values "$D/full"
[ -e "$D/zk-half.u32" ] && fail "gen zipf's keys stayed behind when its values failed"
check two-outputs 0 "$T" sort --type u32 --in "$D/k.u32" --out "$D/sk.u32" --values "$D/v.u32" --values-out "$D/sv.u32"
[ "$(od -An -tu4 "$D/sv.u32" | xargs)" = "3 1 4 0 2" ] || fail "two-outputs: permuted values"
no_temps two-outputs
[ -L "$D/full" ] || fail "the link to /dev/full was replaced"

# --- 6, 12: every numeric option is range-checked: exit 2 naming the option ---------------------------
bad_option() {  # bad_option OPTION CMD...: exit 2 and the message names OPTION
  check "option $1 (${*: -1})" 2 "${@:2}"
  expect_err "option $1" "$1: must be"
}
bad_option --threads "$T" topk --lists "$D/l.tkl" --k 1 --threads 100000
bad_option --threads "$T" topk --lists "$D/l.tkl" --k 1 --threads -1
bad_option --k "$T" topk --lists "$D/l.tkl" --k -1
bad_option --k "$T" topk --lists "$D/l.tkl" --k nan
check "option --stride overflow" 2 "$T" topk --lists "$D/l.tkl" --k 1 --stride 99999999999999999999999
bad_option --threads "$T" sort --type u32 --in "$D/k.u32" --out "$D/o.u32" --threads 100000
bad_option --n "$T" sort --plan --n -1 --k 0.5
bad_option --k "$T" sort --plan --n 16 --k nan
bad_option --k "$T" sort --plan --n 16 --k inf
bad_option --gpu-memory-limit "$T" sort --type u32 --in "$D/k.u32" --out "$D/o.u32" --gpu-memory-limit -1
bad_option --gpus "$T" sort --type u32 --in "$D/k.u32" --out "$D/o.u32" --gpus 0,-1
bad_option --gpu-sm-limit "$T" sort --type u32 --in "$D/k.u32" --out "$D/o.u32" --gpu-sm-limit -1
bad_option --min-interior-run "$T" sort --plan --n 16 --k 0.5 --min-interior-run -2
bad_option --top "$T" wordcount "$D/a.txt" --top -1
bad_option --n "$T" gen zipf --n -1 --out "$D/o.u32"
bad_option --n "$T" gen zipf --n 1e3 --out "$D/o.u32"
bad_option --exponent "$T" gen zipf --exponent nan --out "$D/o.u32"
bad_option --seed "$T" gen zipf --seed -1 --out "$D/o.u32"
bad_option --distinct "$T" gen zipf --distinct 0 --out "$D/o.u32"
bad_option --bytes "$T" gen text --bytes -1 --out "$D/o.txt"
bad_option --vocab "$T" gen text --vocab 0 --out "$D/o.txt"
bad_option --exponent "$T" gen text --exponent -inf --out "$D/o.txt"
bad_option --objects "$T" gen topk --objects -1 --out "$D/o.tkl"
bad_option --lists "$T" gen topk --objects 10 --lists -1 --out "$D/o.tkl"
bad_option --mib "$T" calibrate --mib -1
bad_option --repetitions "$T" calibrate --repetitions 0
bad_option --step "$T" index --dims 4x4x4 --step 0
bad_option --show "$T" index --dims 4x4x4 --show -1
bad_option --size "$T" schedule --kernel matmul --size -256
bad_option --profile-fraction "$T" schedule --kernel matmul --size 256 --profile-fraction nan
bad_option --window "$T" schedule --kernel matmul --size 256 --window -1
[ -e "$D/o.u32" ] || [ -e "$D/o.txt" ] || [ -e "$D/o.tkl" ] && fail "a bad option left an output file"
# Out of memory while reading names the file (exit 1), not a bare std::bad_alloc. (AddressSanitizer
# builds cannot start under a virtual memory limit, and their shadow memory counts in the peaks below.)
sanitized=0
ldd "$T" 2>/dev/null | grep -q -e libasan -e libubsan && sanitized=1
if [ $sanitized = 0 ]; then
  truncate -s 1G "$D/sparse.u32"
  check out-of-memory-read 1 bash -c 'ulimit -v 300000 && "$1" groupby --keys "$2" --agg count' _ "$T" "$D/sparse.u32"
  expect_err out-of-memory-read "$D/sparse.u32: out of memory"
  rm -f "$D/sparse.u32"
fi

# --- 13: a signal mid-run leaves no temporary file ---------------------------------------------------
# The values output is a FIFO nobody reads: sort blocks opening it, with the keys' temporary written.
mkfifo "$D/stall.fifo"
for sig in TERM INT HUP; do
  # Python restores the default SIGINT disposition that a background job of a script would ignore.
  python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])' \
    "$T" sort --type u32 --in "$D/k.u32" --out "$D/sig.u32" --values "$D/v.u32" --values-out "$D/stall.fifo" 2>/dev/null &
  pid=$!
  for _ in $(seq 100); do ls "$D" | grep -q 'sig.u32.tmp-' && break; sleep 0.05; done
  ls "$D" | grep -q 'sig.u32.tmp-' || fail "SIG$sig: the keys' temporary never appeared"
  kill -$sig $pid
  wait $pid 2>/dev/null
  no_temps "SIG$sig"
  [ -e "$D/sig.u32" ] && fail "SIG$sig: the keys output appeared"
done
# groupby creates no file, not even a temporary, while it is still reading its input.
mkfifo "$D/keys.fifo"
"$T" groupby --keys "$D/keys.fifo" --agg count --out "$D/g.csv" &
pid=$!
exec 3>"$D/keys.fifo"
printf '\x01\x00\x00\x00' >&3
sleep 0.3
no_temps "groupby while reading"
[ -e "$D/g.csv" ] && fail "groupby created its output while reading"
printf '\x01\x00\x00\x00' >&3
exec 3>&-
wait $pid || fail "groupby from a FIFO failed"
[ "$(cat "$D/g.csv")" = "$(printf 'key,count\n1,2')" ] || fail "groupby from a FIFO: result"

# --- large files read and written in pieces on several threads ---------------------------------------
head -c $((6 * 1048576 + 12)) /dev/urandom >"$D/six.u32"
for threads in 1 3; do
  check "sort-large-threads-$threads" 0 "$T" sort --type u32 --in "$D/six.u32" --out "$D/six-$threads.npy" --threads $threads --device cpu
done
cmp -s "$D/six-1.npy" "$D/six-3.npy" || fail "sort --threads 3: not the output of --threads 1"
python3 - "$D/six.u32" "$D/six-3.npy" <<'EOF' || fail "sort --threads 3 of a large file: not the sorted input"
import array, sys
keys = array.array("I", open(sys.argv[1], "rb").read())
out = open(sys.argv[2], "rb").read()
header = 10 + out[8] + 256 * out[9]
assert array.array("I", out[header:]).tolist() == sorted(keys)
EOF
# A write that fails part-way (past the file size limit): exit 1 naming the output, nothing left.
for threads in 1 3; do
  check "file-size-limit-threads-$threads" 1 bash -c 'ulimit -f 2048 && "$@"' _ "$T" sort --type u32 --in "$D/six.u32" \
    --out "$D/limited.npy" --threads $threads --device cpu
  expect_err "file-size-limit-threads-$threads" "$D/limited.npy: write failed (File too large)"
  no_temps "file-size-limit-threads-$threads"
  [ -e "$D/limited.npy" ] && fail "file-size-limit-threads-$threads: the output appeared"
done
rm -f "$D"/six*.u32 "$D"/six-*.npy

# --- memory: the input is read into the buffer that is processed (no second copy) -------------------
peak_kib() {  # the peak resident memory (KiB) of a command
  if [ -x /usr/bin/time ]; then  # a small parent: the tiny run's peak is tandem's own baseline
    /usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -1
    return
  fi
  # A child forked from Python starts with Python's resident size (~14 MiB): the baseline then
  # counts that instead of tandem's (~8 MiB), and the check is laxer by the difference.
  python3 -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$@"
}
[ $sanitized = 1 ] && exit $((fails > 0))
truncate -s 64M "$D/zeros.u32"
yes 'the cat' | head -c 64M >"$D/big.txt"
head -c 64M /dev/urandom >"$D/random.u32"
head -c 32M "$D/random.u32" >"$D/half-keys.u32"  # pairs: 32 MiB of keys and 32 MiB of values
tail -c 32M "$D/random.u32" >"$D/half-values.u32"
base=$(peak_kib "$T" groupby --keys "$D/k.u32" --agg count --device cpu)
for cmd in "groupby --keys $D/zeros.u32 --agg count --device cpu" "wordcount $D/big.txt --device cpu" \
           "sort --type u32 --in $D/random.u32 --out $D/sorted.u32 --device cpu --memory low" \
           "sort --type u32 --in $D/half-keys.u32 --out $D/sk.u32 --values $D/half-values.u32 --values-out $D/sv.u32 --device cpu --memory low"; do
  # shellcheck disable=SC2086
  peak=$(peak_kib "$T" $cmd)
  extra=$((peak - base))
  echo "     peak of '$cmd' above a 20-byte run: $extra KiB for 65536 KiB of input"
  [ "$extra" -le $((65536 * 11 / 10)) ] || fail "peak memory of '$cmd': $extra KiB > 1.1 x 65536 KiB"
done
"$T" sort --type u32 --in "$D/random.u32" --out "$D/radix.u32" --device cpu --memory fast
cmp -s "$D/sorted.u32" "$D/radix.u32" || fail "sort --memory low: not the radix sort's result"
"$T" sort --type u32 --in "$D/half-keys.u32" --out "$D/rk.u32" --values "$D/half-values.u32" --values-out "$D/rv.u32" \
  --device cpu --memory fast
cmp -s "$D/sk.u32" "$D/rk.u32" && cmp -s "$D/sv.u32" "$D/rv.u32" || fail "sort --memory low pairs: not the radix sort's result"
rm -f "$D"/zeros.u32 "$D"/big.txt "$D"/random.u32 "$D"/sorted.u32 "$D"/radix.u32 "$D"/half-*.u32 "$D"/[sr][kv].u32

exit $((fails > 0))
