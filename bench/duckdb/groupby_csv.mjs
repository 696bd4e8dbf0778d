// The db-benchmark group-by questions in DuckDB straight from a CSV file: the anchor of
// bench_groupby_csv.
//
//   node groupby_csv.mjs --csv FILE --threads T --reps R --warmup W --out DIR [--questions q1,q2,...]
//
// Times each question as `CREATE TABLE ans AS <query over read_csv(FILE)>` (types detected by
// DuckDB's sniffer, as a user's query would have them), W untimed then R timed runs in one
// DuckDB instance (its start-up is not timed), and writes each answer sorted by its keys to
// DIR/<question>.csv. Prints one JSON object: {"threads": T, "version": v, "times": {"q1": [s, ...]}}.
import { QUESTIONS, openDuckDB, option, timeQuestions } from './common.mjs';

const csv = option('csv');
const threads = Number(option('threads', '2'));
const reps = Number(option('reps', '3'));
const warmup = Number(option('warmup', '1'));
const out = option('out');
const wanted = option('questions', Object.keys(QUESTIONS).join(',')).split(',');

const { connection, version } = await openDuckDB(threads);
const times = await timeQuestions(connection, wanted, `read_csv('${csv}')`, { reps, warmup, out });
console.log(JSON.stringify({ threads, version, times }));
