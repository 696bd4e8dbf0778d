// The small harness every benchmark uses: warm-up, repetitions, median/min/max, a table on
// stdout, JSON to a file, checked results and ratios against the anchor measured in the same run.
//
// Command line shared by all benchmarks:
//   --reps N      timed repetitions (default 5)     --warmup N   untimed runs first (default 1)
//   --json FILE   write every measurement as JSON  --quick      small sizes (CI, smoke runs)
//   --max-log2 K  largest problem size 2^K          any other --name value pair: args.get(...)
// A benchmark prints "SUMMARY|<bench>|<what>|<value>|<goal>|PASS/MISS/INFO" lines that
// scripts/gpu-check gathers into its final table.
#pragma once
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tandem/core/timing.hpp"

namespace tandem::bench {

class Bench {
 public:
  Bench(std::string name, int argc, char** argv);

  int reps() const { return reps_; }
  int warmup() const { return warmup_; }
  bool quick() const { return quick_; }
  // Extra options: --key value, with a default.
  long long get_int(const std::string& key, long long def) const;
  double get_double(const std::string& key, double def) const;
  std::string get(const std::string& key, const std::string& def) const;
  bool has_flag(const std::string& key) const;
  // Comma-separated thread counts ("1,2,16"), each at least 1.
  std::vector<int> get_threads(const std::string& key, const std::string& def) const;

  // Runs f (which returns its own time in seconds: GPU events or a stopwatch) warmup + reps times.
  Stats measure(const std::function<double()>& f) const;
  // Runs f warmup + reps times under a stopwatch.
  Stats time(const std::function<void()>& f) const;

  // One row: `work` units (bytes, keys, ...) done per run; `ok` says the result was checked.
  void record(const std::string& case_name, const std::string& method, const Stats& s, double work,
              const std::string& unit, bool ok, const nlohmann::json& extra = {});
  // A goal line: value compared with goal (higher_is_better or not). Returns pass.
  bool goal(const std::string& what, double value, double goal, bool higher_is_better = true,
            const std::string& unit = "x");
  void info(const std::string& what, double value, const std::string& unit = "");
  // Marks the run failed (a result did not match its reference).
  void fail(const std::string& why);

  // Prints the table, writes JSON, returns the process exit code (1 if any check failed).
  int finish();

 private:
  std::string name_;
  int reps_{5};
  int warmup_{1};
  bool quick_{false};
  std::string json_path_;
  std::map<std::string, std::string> extra_;
  mutable std::set<std::string> read_;  // extra options some part of the benchmark asked for
  std::vector<nlohmann::json> rows_;
  std::vector<nlohmann::json> goals_;
  std::vector<std::string> failures_;
};

// Runs a shell command (an anchor outside the process): its exit status and its stdout + stderr.
struct CommandOutput {
  int status{-1};  // the exit code; -1 when it could not run or was killed
  std::string text;
};
CommandOutput run_command(const std::string& command);
// Runs an anchor that prints one JSON object on its standard output (its stderr passes through):
// the object. Error "`what` run failed" with the command and what it printed when it fails.
nlohmann::json run_json_command(const std::string& what, const std::string& command);
// `text` quoted for a POSIX shell.
std::string shell_quote(const std::string& text);
// The command that runs a DuckDB anchor: Node with `node_script` (bench/duckdb/*.mjs), or, with
// `duckdb_lib` (a machine without Node), the C API program duckdb_groupby_csv beside the
// benchmark (`argv0`'s folder) over that libduckdb.so.
std::string duckdb_command(const std::string& node_script, const std::string& duckdb_lib, const char* argv0);

}  // namespace tandem::bench
