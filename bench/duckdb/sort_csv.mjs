// File-to-file table sorts in DuckDB: the anchor of bench_table_sort_csv.
//
//   node sort_csv.mjs --csv FILE --threads T --reps R --warmup W --out FILE --order 'id1, id2, v3 DESC'
//                     [--memory-limit 200MB --temp-dir DIR]
//
// Times `COPY (SELECT * FROM read_csv(FILE) ORDER BY <order>) TO OUT (HEADER, DELIMITER ',')`, W
// untimed then R timed runs in one DuckDB instance (its start-up is not timed); the types are
// DuckDB's sniffer's, as a user's query would have them. OUT keeps the last run's rows.
// Prints one JSON object: {"threads": T, "version": v, "times": [s, ...]}.
import { openDuckDB, option, timeStatement } from './common.mjs';

const csv = option('csv');
const threads = Number(option('threads', '2'));
const reps = Number(option('reps', '3'));
const warmup = Number(option('warmup', '0'));
const out = option('out');
const order = option('order');
const memoryLimit = option('memory-limit', '');

const { connection, version } = await openDuckDB(threads);
if (memoryLimit !== '') {
  await connection.run(`SET memory_limit = '${memoryLimit}'`);
  await connection.run(`SET temp_directory = '${option('temp-dir')}'`);
}
const times = await timeStatement(connection,
  `COPY (SELECT * FROM read_csv('${csv}') ORDER BY ${order}) TO '${out}' (HEADER, DELIMITER ',')`,
  { reps, warmup });
console.log(JSON.stringify({ threads, version, times }));
