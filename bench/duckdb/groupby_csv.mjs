// The db-benchmark group-by questions in DuckDB straight from a CSV file: the anchor of
// bench_groupby_csv.
//
//   node groupby_csv.mjs --csv FILE --threads T --reps R --warmup W --out DIR [--questions q1,q2,...]
//                        [--write 1]
//
// Times each question as `CREATE TABLE ans AS <query over read_csv(FILE)>` (types detected by
// DuckDB's sniffer, as a user's query would have them), W untimed then R timed runs in one
// DuckDB instance (its start-up is not timed), and writes each answer sorted by its keys to
// DIR/<question>.csv. With --write 1 the timed statement is `COPY (<query>) TO` a CSV file instead
// (the answer written, as tandem's command line writes it). Prints one JSON object: {"threads": T, "version": v, "times": {"q1": [s, ...]}}.
import { QUESTIONS, openDuckDB, option, timeQuestions } from './common.mjs';

const csv = option('csv');
const threads = Number(option('threads', '2'));
const reps = Number(option('reps', '3'));
const warmup = Number(option('warmup', '1'));
const out = option('out');
const wanted = option('questions', Object.keys(QUESTIONS).join(',')).split(',');

const { connection, version } = await openDuckDB(threads);
const write = option('write', '0') === '1';
const times = await timeQuestions(connection, wanted, `read_csv('${csv}')`, { reps, warmup, out, write });
console.log(JSON.stringify({ threads, version, times }));
