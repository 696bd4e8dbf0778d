// DuckDB's read_csv of one file into an in-memory table, timed, as the anchor of bench_csv.
//
//   node read_csv.mjs FILE --threads N [--reps R] [--warmup W] [--sum COLUMN]
//
// Prints one JSON line: {"duckdb": version, "threads": N, "seconds": [one per timed run],
// "rows": row count, "sum": the sum of COLUMN as text} (the row count and sum check the read).
import { openDuckDB, timeStatement } from './common.mjs';

function options(argv) {
  const o = { file: null, threads: 2, reps: 3, warmup: 1, sum: 'v1' };
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--threads') o.threads = Number(value());
    else if (a === '--reps') o.reps = Number(value());
    else if (a === '--warmup') o.warmup = Number(value());
    else if (a === '--sum') o.sum = value();
    else if (!a.startsWith('--') && o.file === null) o.file = a;
    else throw new Error(`unexpected argument ${a}`);
  }
  if (o.file === null) throw new Error('usage: node read_csv.mjs FILE --threads N [--reps R] [--warmup W] [--sum COLUMN]');
  return o;
}

const o = options(process.argv.slice(2));
const { connection, version } = await openDuckDB(o.threads);
const literal = `'${o.file.replaceAll("'", "''")}'`;
const load = `CREATE OR REPLACE TABLE t AS SELECT * FROM read_csv(${literal})`;
const seconds = await timeStatement(connection, load, { reps: o.reps, warmup: o.warmup });
const column = `"${o.sum.replaceAll('"', '""')}"`;
const check = await connection.runAndReadAll(`SELECT count(*)::VARCHAR, sum(${column})::VARCHAR FROM t`);
const [rows, sum] = check.getRows()[0];
console.log(JSON.stringify({ duckdb: version, threads: o.threads, seconds, rows: Number(rows), sum }));
