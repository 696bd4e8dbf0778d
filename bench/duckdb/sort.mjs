// Table sorts in DuckDB: the CPU anchor of bench_table_sort.
//
//   node sort.mjs --csv FILE --threads T --reps R --out DIR --queries 'name=ORDER BY list;...'
//
// Loads FILE (generate_groupby_table's columns) into an in-memory table x, then times each query
// as `CREATE TABLE s AS SELECT * FROM x ORDER BY <list> [LIMIT k]` R times (compute only: the data
// is already loaded; the result keeps its order, DuckDB preserving insertion order), and writes
// every 997th row of the last result (rowid order) to DIR/<name>.csv for the check.
// Prints one JSON object: {"load_s": s, "threads": T, "version": v, "times": {"name": [s, ...]}}.
import { DuckDBInstance } from '@duckdb/node-api';

function option(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) {
    if (fallback === undefined) throw new Error(`--${name} is required`);
    return fallback;
  }
  return process.argv[i + 1];
}

const csv = option('csv');
const threads = Number(option('threads', '2'));
const reps = Number(option('reps', '3'));
const out = option('out');
const queries = option('queries').split(';').map((q) => q.split('='));

const db = await DuckDBInstance.create(':memory:', { threads: String(threads) });
const c = await db.connect();
const version = (await (await c.run('SELECT version() AS v')).getRows())[0][0];
let t = performance.now();
await c.run(`CREATE TABLE x AS SELECT * FROM read_csv('${csv}', header = true, columns = {
  'id1': 'VARCHAR', 'id2': 'VARCHAR', 'id3': 'VARCHAR', 'id4': 'INTEGER', 'id5': 'INTEGER', 'id6': 'INTEGER',
  'v1': 'INTEGER', 'v2': 'INTEGER', 'v3': 'DOUBLE'})`);
const load_s = (performance.now() - t) / 1000;
const times = {};
for (const [name, order] of queries) {
  times[name] = [];
  for (let r = 0; r < reps; ++r) {
    await c.run('DROP TABLE IF EXISTS s');
    t = performance.now();
    await c.run(`CREATE TABLE s AS SELECT * FROM x ${order}`);
    times[name].push((performance.now() - t) / 1000);
  }
  await c.run(`COPY (SELECT rowid AS row, * FROM s WHERE rowid % 997 = 0 ORDER BY rowid) TO '${out}/${name}.csv' (HEADER, DELIMITER ',')`);
}
console.log(JSON.stringify({ load_s, threads, version, times }));
