// The db-benchmark group-by questions in DuckDB straight from a CSV file: the anchor of
// bench_groupby_csv.
//
//   node groupby_csv.mjs --csv FILE --threads T --reps R --warmup W --out DIR [--questions q1,q2,...]
//
// Times each question as `CREATE TABLE ans AS <query over read_csv(FILE)>` (types detected by
// DuckDB's sniffer, as a user's query would have them), W untimed then R timed runs in one
// DuckDB instance (its start-up is not timed), and writes each answer sorted by its keys to
// DIR/<question>.csv. Prints one JSON object: {"threads": T, "version": v, "times": {"q1": [s, ...]}}.
import { DuckDBInstance } from '@duckdb/node-api';

const QUESTIONS = {
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
const warmup = Number(option('warmup', '1'));
const out = option('out');
const wanted = option('questions', Object.keys(QUESTIONS).join(',')).split(',');

const db = await DuckDBInstance.create(':memory:', { threads: String(threads) });
const c = await db.connect();
const version = (await (await c.run('SELECT version() AS v')).getRows())[0][0];
const from = `read_csv('${csv}')`;
const times = {};
for (const q of wanted) {
  const [sql, order] = QUESTIONS[q];
  const query = sql.replaceAll(' FROM x', ` FROM ${from}`);
  times[q] = [];
  for (let r = 0; r < warmup + reps; ++r) {
    await c.run('DROP TABLE IF EXISTS ans');
    const t = performance.now();
    await c.run(`CREATE TABLE ans AS ${query}`);
    if (r >= warmup) times[q].push((performance.now() - t) / 1000);
  }
  await c.run(`COPY (SELECT * FROM ans ORDER BY ${order}) TO '${out}/${q}.csv' (HEADER, DELIMITER ',')`);
}
console.log(JSON.stringify({ threads, version, times }));
