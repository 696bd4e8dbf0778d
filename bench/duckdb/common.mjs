// What the DuckDB anchor scripts share: their options, an in-memory DuckDB with a thread count,
// generate_groupby_table's CSV loaded as a table, the db-benchmark questions, timed statements.
import { DuckDBInstance } from '@duckdb/node-api';

// The db-benchmark group-by questions, its own queries for DuckDB over table x: [query, the
// order of the answer's rows].
export const QUESTIONS = {
  q1: ['SELECT id1, sum(v1) AS v1 FROM x GROUP BY id1', 'id1'],
  q2: ['SELECT id1, id2, sum(v1) AS v1 FROM x GROUP BY id1, id2', 'id1, id2'],
  q3: ['SELECT id3, sum(v1) AS v1, avg(v3) AS v3 FROM x GROUP BY id3', 'id3'],
  q4: ['SELECT id4, avg(v1) AS v1, avg(v2) AS v2, avg(v3) AS v3 FROM x GROUP BY id4', 'id4'],
  q5: ['SELECT id6, sum(v1) AS v1, sum(v2) AS v2, sum(v3) AS v3 FROM x GROUP BY id6', 'id6'],
  q6: ['SELECT id4, id5, quantile_cont(v3, 0.5) AS median_v3, stddev(v3) AS sd_v3 FROM x GROUP BY id4, id5', 'id4, id5'],
  q7: ['SELECT id3, max(v1) - min(v2) AS range_v1_v2 FROM x GROUP BY id3', 'id3'],
  q8: ['SELECT id6, largest2_v3 FROM (SELECT id6, v3 AS largest2_v3, row_number() OVER (PARTITION BY id6 ORDER BY v3 DESC) AS order_v3 FROM x WHERE v3 IS NOT NULL) sub_query WHERE order_v3 <= 2', 'id6, largest2_v3 DESC'],
  q9: ['SELECT id2, id4, pow(corr(v1, v2), 2) AS r2 FROM x GROUP BY id2, id4', 'id2, id4'],
  q10: ['SELECT id1, id2, id3, id4, id5, id6, sum(v3) AS v3, count(*) AS count FROM x GROUP BY id1, id2, id3, id4, id5, id6', 'id1, id2, id3, id4, id5, id6'],
};

// The value after --NAME on the command line, or `fallback` when it is absent (without one, the
// option is required).
export function option(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) {
    if (fallback === undefined) throw new Error(`--${name} is required`);
    return fallback;
  }
  return process.argv[i + 1];
}

// Instances opened here, referenced for the whole run so that none is collected (and closed) while
// its connection is in use.
const instances = [];

// An in-memory DuckDB running queries on `threads` threads: a connection to it and DuckDB's version.
export async function openDuckDB(threads) {
  const instance = await DuckDBInstance.create(':memory:', { threads: String(threads) });
  instances.push(instance);
  const connection = await instance.connect();
  const version = (await (await connection.run('SELECT version() AS v')).getRows())[0][0];
  return { connection, version };
}

// Loads FILE (columns id1..id6, v1..v3 as generate_groupby_table writes them) into table x with
// the columns' types given, not sniffed: the seconds it took.
export async function loadGroupbyTable(connection, csv) {
  const t = performance.now();
  await connection.run(`CREATE TABLE x AS SELECT * FROM read_csv('${csv}', header = true, columns = {
  'id1': 'VARCHAR', 'id2': 'VARCHAR', 'id3': 'VARCHAR', 'id4': 'INTEGER', 'id5': 'INTEGER', 'id6': 'INTEGER',
  'v1': 'INTEGER', 'v2': 'INTEGER', 'v3': 'DOUBLE'})`);
  return (performance.now() - t) / 1000;
}

// Runs `statement` warmup + reps times, `before` (if given) untimed ahead of each run: the
// seconds of the last `reps` runs.
export async function timeStatement(connection, statement, { reps, warmup = 0, before = null }) {
  const seconds = [];
  for (let r = 0; r < warmup + reps; ++r) {
    if (before !== null) await connection.run(before);
    const t = performance.now();
    await connection.run(statement);
    if (r >= warmup) seconds.push((performance.now() - t) / 1000);
  }
  return seconds;
}

// Times each question of `wanted` over `from` (a table or a table function standing in for x) as
// `CREATE TABLE ans AS <query>` and writes its last answer, sorted by its keys, to
// `out`/<question>.csv: the seconds of each question's timed runs.
// write: time the query writing its answer to a CSV file (`COPY (query) TO`), as a command-line
// user asking for a file runs it, instead of `CREATE TABLE ans AS query`; the answer checked is
// then computed once more, untimed.
export async function timeQuestions(connection, wanted, from, { reps, warmup = 0, out, write = false }) {
  const times = {};
  for (const q of wanted) {
    const [sql, order] = QUESTIONS[q];
    const query = sql.replaceAll(' FROM x', ` FROM ${from}`);
    const timed = write ? `COPY (${query}) TO '${out}/${q}.written.csv' (HEADER, DELIMITER ',')`
      : `CREATE TABLE ans AS ${query}`;
    times[q] = await timeStatement(connection, timed, { reps, warmup, before: 'DROP TABLE IF EXISTS ans' });
    if (write) await connection.run(`CREATE TABLE ans AS ${query}`);
    await connection.run(`COPY (SELECT * FROM ans ORDER BY ${order}) TO '${out}/${q}.csv' (HEADER, DELIMITER ',')`);
  }
  return times;
}
