#!/usr/bin/env bash
# groupby over tables: CSV input with string keys, quoting and missing values, .npy columns,
# CSV and .npy-folder outputs, malformed input (exit 2, no output), option errors.
set -u
T=$1
source "$(dirname "$0")/lib.bash"
temp_dir d
printf 'city,kind,n,x\n"Paris, FR",a,1,0.5\nOslo,b,2,\n"Paris, FR",a,3,1.5\n"Say ""hi""",,4,2\nOslo,b,,3\n' >"$d/t.csv"
check csv 0 "$T" groupby "$d/t.csv" --by city,kind --agg 'sum(n),mean(x),count(),count(n)' --device cpu
same csv-out "$out" "$(printf 'city,kind,sum_n,mean_x,count,count_n\nOslo,b,2,3,2,1\n"Paris, FR",a,4,1,2,2\n"Say ""hi""",,4,2,1,1')"
check csv-explain 0 "$T" groupby "$d/t.csv" --by kind --agg 'max(x)' --explain --device cpu
grep -q "CPU engine" "$out" || { echo "FAIL csv-explain text"; fails=$((fails+1)); }
check csv-file-out 0 "$T" groupby "$d/t.csv" --by kind --agg 'min(n),nunique(city)' --out "$d/r.csv" --device cpu
same csv-file-out-text "$d/r.csv" "$(printf 'kind,min_n,nunique_city\na,1,1\nb,2,1\n,4,1')"
check schema 0 "$T" groupby "$d/t.csv" --by kind --agg 'sum(n)' --schema n:f64 --device cpu
same schema-out "$out" "$(printf 'kind,sum_n\na,4\nb,2\n,4')"
printf 'k\tv\n1\t10\n2\t20\n1\t5\n' >"$d/t.tsv"
check tab 0 "$T" groupby "$d/t.tsv" --by k --agg 'sum(v),median(v)' --device cpu
same tab-out "$out" "$(printf 'k,sum_v,median_v\n1,15,7.5\n2,20,20')"
# .npy columns, and a folder of .npy columns as output
"$T" gen zipf --n 1000 --distinct 10 --type u32 --out "$d/k.npy" >/dev/null 2>&1
check npy-columns 0 "$T" groupby --column key="$d/k.npy" --by key --agg 'count()' --out "$d/folder/" --device cpu
[ -f "$d/folder/table.json" ] && [ -f "$d/folder/count.npy" ] || { echo "FAIL npy-columns folder"; fails=$((fails+1)); }
check raw-needs-type 2 "$T" groupby --column key="$d/k.raw" --by key --agg 'count()'
# malformed CSV: exit 2, the file, line and column named, no output file
printf 'a,b\n1,2\n3\n' >"$d/ragged.csv"
check ragged 2 "$T" groupby "$d/ragged.csv" --by a --agg 'sum(b)' --out "$d/none.csv"
grep -q "ragged.csv:3" "$out" || { echo "FAIL ragged message"; cat "$out"; fails=$((fails+1)); }
[ ! -e "$d/none.csv" ] || { echo "FAIL ragged left an output"; fails=$((fails+1)); }
printf 'a,b\n1,"x\n' >"$d/quote.csv"
check unterminated-quote 2 "$T" groupby "$d/quote.csv" --by a --agg 'count()' --out "$d/none.csv"
[ ! -e "$d/none.csv" ] || { echo "FAIL quote left an output"; fails=$((fails+1)); }
check bad-number 2 "$T" groupby "$d/t.csv" --by kind --agg 'sum(city)' --schema city:i64
check no-column 2 "$T" groupby "$d/t.csv" --by nope --agg 'count()'
check sum-of-strings 2 "$T" groupby "$d/t.csv" --by kind --agg 'sum(city)'
check bad-agg 2 "$T" groupby "$d/t.csv" --by kind --agg 'sum(n'
check no-by 2 "$T" groupby "$d/t.csv" --agg 'count()'
check no-input 2 "$T" groupby --by a --agg 'count()'
check bad-delimiter 2 "$T" groupby "$d/t.csv" --by kind --agg 'count()' --delimiter ';'
check threads-range 2 "$T" groupby "$d/t.csv" --by kind --agg 'count()' --threads -1
check mixed-forms 2 "$T" groupby "$d/t.csv" --keys "$d/k.npy" --by kind --agg 'count()'
check missing-file 2 "$T" groupby "$d/none.csv" --by a --agg 'count()'
"$T" gen groupby --rows 2000 --k 5 --nas 5 --out "$d/g.csv" >/dev/null 2>&1
check db-q10 0 "$T" groupby "$d/g.csv" --by id1,id2,id3,id4,id5,id6 --agg 'sum(v3),count()' --device cpu
[ "$(wc -l <"$out")" -gt 1000 ] || { echo "FAIL db-q10 rows"; fails=$((fails+1)); }
# Where there is a GPU, its engine writes the same CSV as the CPU engine (string and composite
# keys, missing values; aggregations whose results do not depend on the order of float additions).
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  agg='sum(v1),max(v3),median(v3),top(v3,2),min(id3),nunique(v2),count()'
  check db-gpu 0 "$T" groupby "$d/g.csv" --by id1,id4 --agg "$agg" --device gpu --out "$d/gpu.csv"
  check db-cpu 0 "$T" groupby "$d/g.csv" --by id1,id4 --agg "$agg" --device cpu --out "$d/cpu.csv"
  cmp -s "$d/gpu.csv" "$d/cpu.csv" || { echo "FAIL db-gpu differs from the CPU engine"; diff "$d/gpu.csv" "$d/cpu.csv" | head; fails=$((fails+1)); }
fi
echo "$fails failed"
[ $fails -eq 0 ]
