// The DuckDB anchor of bench_groupby_csv for machines without Node (the GPU box): the same
// questions, timing and output as groupby_csv.mjs, through DuckDB's C API in the libduckdb.so
// that the npm package ships (@duckdb/node-bindings-linux-x64), opened at run time, so that
// nothing in the project links DuckDB.
//
//   duckdb_groupby_csv --lib libduckdb.so --csv FILE --threads T --reps R --warmup W --out DIR
//                      [--questions q1,q2,...] [--write 1]
//
// Times each question as `CREATE TABLE ans AS <query over read_csv(FILE)>` (with --write 1 as
// `COPY (<query>) TO` a CSV file), W untimed then R timed runs, writes each answer sorted by its
// keys to DIR/<question>.csv, and prints one JSON object: {"threads": T, "version": v, "times":
// {"q1": [s, ...]}}.
//
// With --order (the anchor of bench_table_sort_csv, as sort_csv.mjs), it times the file-to-file
// sort `COPY (SELECT * FROM read_csv(FILE) ORDER BY <order>) TO OUT (HEADER, DELIMITER ',')`
// instead, --out naming the output file, and prints {"threads": T, "version": v, "times": [s, ...]}:
//
//   duckdb_groupby_csv --lib libduckdb.so --csv FILE --threads T --reps R --warmup W --out FILE
//                      --order 'id1, id2, v3 DESC' [--memory-limit 200MB --temp-dir DIR]
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "duck_api.hpp"

namespace {

// The db-benchmark questions over table x, and the order of each answer's rows (as common.mjs).
const std::map<std::string, std::pair<std::string, std::string>> kQuestions = {
    {"q1", {"SELECT id1, sum(v1) AS v1 FROM x GROUP BY id1", "id1"}},
    {"q2", {"SELECT id1, id2, sum(v1) AS v1 FROM x GROUP BY id1, id2", "id1, id2"}},
    {"q3", {"SELECT id3, sum(v1) AS v1, avg(v3) AS v3 FROM x GROUP BY id3", "id3"}},
    {"q4", {"SELECT id4, avg(v1) AS v1, avg(v2) AS v2, avg(v3) AS v3 FROM x GROUP BY id4", "id4"}},
    {"q5", {"SELECT id6, sum(v1) AS v1, sum(v2) AS v2, sum(v3) AS v3 FROM x GROUP BY id6", "id6"}},
    {"q6",
     {"SELECT id4, id5, quantile_cont(v3, 0.5) AS median_v3, stddev(v3) AS sd_v3 FROM x GROUP BY id4, id5",
      "id4, id5"}},
    {"q7", {"SELECT id3, max(v1) - min(v2) AS range_v1_v2 FROM x GROUP BY id3", "id3"}},
    {"q8",
     {"SELECT id6, largest2_v3 FROM (SELECT id6, v3 AS largest2_v3, row_number() OVER (PARTITION BY id6 ORDER BY v3 "
      "DESC) AS order_v3 FROM x WHERE v3 IS NOT NULL) sub_query WHERE order_v3 <= 2",
      "id6, largest2_v3 DESC"}},
    {"q10",
     {"SELECT id1, id2, id3, id4, id5, id6, sum(v3) AS v3, count(*) AS count FROM x GROUP BY id1, id2, id3, id4, id5, "
      "id6",
      "id1, id2, id3, id4, id5, id6"}},
};

std::string option(int argc, char** argv, const std::string& name, const char* fallback = nullptr) {
  for (int i = 1; i + 1 < argc; ++i)
    if (argv[i] == "--" + name) return argv[i + 1];
  if (fallback == nullptr) throw std::runtime_error("--" + name + " is required");
  return fallback;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t at = 0; (at = s.find(from, at)) != std::string::npos; at += to.size())
    s.replace(at, from.size(), to);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string csv = option(argc, argv, "csv"), out = option(argc, argv, "out");
    const int threads = std::stoi(option(argc, argv, "threads", "2"));
    const int reps = std::stoi(option(argc, argv, "reps", "3")), warmup = std::stoi(option(argc, argv, "warmup", "1"));
    std::string wanted = option(argc, argv, "questions", "q1,q2,q3,q4,q5,q6,q7,q8,q10");
    const bool write = option(argc, argv, "write", "0") == "1";
    tandem::bench::DuckDb duck(option(argc, argv, "lib"));
    duck.run("SET threads = " + std::to_string(threads));
    const std::string version = duck.first_cell("SELECT version()");
    if (const std::string order = option(argc, argv, "order", ""); !order.empty()) {
      if (const std::string limit = option(argc, argv, "memory-limit", ""); !limit.empty()) {
        duck.run("SET memory_limit = '" + limit + "'");
        duck.run("SET temp_directory = '" + option(argc, argv, "temp-dir") + "'");
      }
      std::string seconds;
      for (int r = 0; r < warmup + reps; ++r) {
        const auto t = std::chrono::steady_clock::now();
        duck.run("COPY (SELECT * FROM read_csv('" + csv + "') ORDER BY " + order + ") TO '" + out +
                 "' (HEADER, DELIMITER ',')");
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
        if (r >= warmup) seconds += (seconds.empty() ? "" : ", ") + std::to_string(s);
      }
      std::printf("{\"threads\": %d, \"version\": \"%s\", \"times\": [%s]}\n", threads, version.c_str(),
                  seconds.c_str());
      return 0;
    }
    std::string times;
    for (std::size_t at = 0; at <= wanted.size();) {
      const std::size_t end = std::min(wanted.find(',', at), wanted.size());
      const std::string q = wanted.substr(at, end - at);
      at = end + 1;
      const auto it = kQuestions.find(q);
      if (it == kQuestions.end()) throw std::runtime_error("unknown question " + q);
      const std::string query = replace_all(it->second.first, " FROM x", " FROM read_csv('" + csv + "')");
      const std::string timed =
          write ? "COPY (" + query + ") TO '" + out + "/" + q + ".written.csv' (HEADER, DELIMITER ',')"
                : "CREATE TABLE ans AS " + query;
      std::string seconds;
      for (int r = 0; r < warmup + reps; ++r) {
        duck.run("DROP TABLE IF EXISTS ans");
        const auto t = std::chrono::steady_clock::now();
        duck.run(timed);
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
        if (r >= warmup) seconds += (seconds.empty() ? "" : ", ") + std::to_string(s);
      }
      if (write) duck.run("CREATE TABLE ans AS " + query);  // the answer checked, untimed
      duck.run("COPY (SELECT * FROM ans ORDER BY " + it->second.second + ") TO '" + out + "/" + q +
               ".csv' (HEADER, DELIMITER ',')");
      times += (times.empty() ? "" : ", ") + ("\"" + q + "\": [" + seconds + "]");
    }
    std::printf("{\"threads\": %d, \"version\": \"%s\", \"times\": {%s}}\n", threads, version.c_str(), times.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "duckdb_groupby_csv: %s\n", e.what());
    return 2;
  }
}
