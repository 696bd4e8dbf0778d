// The db-benchmark group-by questions in DuckDB: the CPU anchor of bench_groupby_db.
//
//   node groupby.mjs --csv FILE --threads T --reps R --out DIR [--questions q1,q2,...]
//
// Loads FILE (columns id1..id6, v1..v3 as generate_groupby_table writes them) into an in-memory
// table, then times each question as `CREATE TABLE ans AS <query>` (compute only: the data is
// already loaded), R times, and writes each answer sorted by its keys to DIR/<question>.csv.
// Prints one JSON object: {"load_s": s, "threads": T, "version": v, "times": {"q1": [s, ...]}}.
// The queries are the db-benchmark's own for DuckDB.
import { QUESTIONS, loadGroupbyTable, openDuckDB, option, timeQuestions } from './common.mjs';

const csv = option('csv');
const threads = Number(option('threads', '2'));
const reps = Number(option('reps', '3'));
const out = option('out');
const wanted = option('questions', Object.keys(QUESTIONS).join(',')).split(',');

const { connection, version } = await openDuckDB(threads);
const load_s = await loadGroupbyTable(connection, csv);
const times = await timeQuestions(connection, wanted, 'x', { reps, out });
console.log(JSON.stringify({ load_s, threads, version, times }));
