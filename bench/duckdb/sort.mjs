// Table sorts in DuckDB: the CPU anchor of bench_table_sort.
//
//   node sort.mjs --csv FILE --threads T --reps R --out DIR --queries 'name=ORDER BY list;...'
//
// Loads FILE (generate_groupby_table's columns) into an in-memory table x, then times each query
// as `CREATE TABLE s AS SELECT * FROM x ORDER BY <list> [LIMIT k]` R times (compute only: the data
// is already loaded; the result keeps its order, DuckDB preserving insertion order), and writes
// every 997th row of the last result (rowid order) to DIR/<name>.csv for the check.
// Prints one JSON object: {"load_s": s, "threads": T, "version": v, "times": {"name": [s, ...]}}.
import { loadGroupbyTable, openDuckDB, option, timeStatement } from './common.mjs';

const csv = option('csv');
const threads = Number(option('threads', '2'));
const reps = Number(option('reps', '3'));
const out = option('out');
const queries = option('queries').split(';').map((q) => q.split('='));

const { connection, version } = await openDuckDB(threads);
const load_s = await loadGroupbyTable(connection, csv);
const times = {};
for (const [name, order] of queries) {
  times[name] = await timeStatement(connection, `CREATE TABLE s AS SELECT * FROM x ${order}`, {
    reps, before: 'DROP TABLE IF EXISTS s',
  });
  await connection.run(`COPY (SELECT rowid AS row, * FROM s WHERE rowid % 997 = 0 ORDER BY rowid) TO '${out}/${name}.csv' (HEADER, DELIMITER ',')`);
}
console.log(JSON.stringify({ load_s, threads, version, times }));
