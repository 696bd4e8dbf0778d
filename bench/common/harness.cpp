#include "harness.hpp"

#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <utility>

#include <fmt/format.h>

#include "tandem/core/device.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/format.hpp"

namespace tandem::bench {

Bench::Bench(std::string name, int argc, char** argv) : name_(std::move(name)) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << name_ << ": option " << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      std::cout << fmt::format(
          "{}: see the comment at the top of bench/{}.cpp for its options; every benchmark\n"
          "takes --reps N, --warmup N, --json FILE and --quick\n",
          name_, name_);
      std::exit(0);
    }
    if (a == "--reps") reps_ = std::max(1, std::atoi(next().c_str()));
    else if (a == "--warmup") warmup_ = std::max(0, std::atoi(next().c_str()));
    else if (a == "--json") json_path_ = next();
    else if (a == "--quick") quick_ = true;
    else if (a.rfind("--", 0) == 0 && i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0) extra_[a] = next();
    else if (a.rfind("--", 0) == 0) extra_.insert_or_assign(a, std::string(1, '1'));  // a flag
    else {
      std::cerr << name_ << ": unexpected argument " << a << '\n';
      std::exit(2);
    }
  }
  // Every line out at once: a run stopped by a time limit keeps the results it printed.
  std::cout << std::unitbuf;
  const auto s = system_info();
  std::cout << fmt::format("# {}: CPU {} ({} cores)", name_, s.cpu.model, s.cpu.physical_cores);
  for (const auto& g : s.gpus) std::cout << fmt::format("; GPU{} {}", g.index, g.name);
  std::cout << fmt::format("; reps {}{}\n", reps_, quick_ ? " (quick)" : "");
}

long long Bench::get_int(const std::string& key, long long def) const {
  read_.insert(key);
  auto it = extra_.find(key);
  return it == extra_.end() ? def : std::atoll(it->second.c_str());
}
double Bench::get_double(const std::string& key, double def) const {
  read_.insert(key);
  auto it = extra_.find(key);
  return it == extra_.end() ? def : std::atof(it->second.c_str());
}
std::string Bench::get(const std::string& key, const std::string& def) const {
  read_.insert(key);
  auto it = extra_.find(key);
  return it == extra_.end() ? def : it->second;
}
bool Bench::has_flag(const std::string& key) const {
  read_.insert(key);
  return extra_.count(key) > 0;
}

std::vector<int> Bench::get_threads(const std::string& key, const std::string& def) const {
  const std::string list = get(key, def);
  std::vector<int> v;
  for (std::size_t i = 0; i < list.size();) {
    const std::size_t j = std::min(list.find(',', i), list.size());
    if (j > i) v.push_back(std::max(1, std::atoi(list.substr(i, j - i).c_str())));
    i = j + 1;
  }
  return v;
}

Stats Bench::measure(const std::function<double()>& f) const {
  for (int i = 0; i < warmup_; ++i) f();
  std::vector<double> s;
  for (int i = 0; i < reps_; ++i) s.push_back(f());
  return summarize(std::move(s));
}

Stats Bench::time(const std::function<void()>& f) const {
  return measure([&] {
    Stopwatch w;
    f();
    return w.seconds();
  });
}

void Bench::record(const std::string& case_name, const std::string& method, const Stats& s, double work,
                   const std::string& unit, bool ok, const nlohmann::json& extra) {
  const double rate = s.median > 0 ? work / s.median : 0;
  std::cout << fmt::format("{:<34} {:<30} median {:>10}  min {:>10}  max {:>10}  {:>14}  {}\n", case_name, method,
                           human_seconds(s.median), human_seconds(s.min), human_seconds(s.max),
                           human_rate(rate, unit.c_str()), ok ? "ok" : "WRONG");
  if (!ok) fail(fmt::format("{} / {}: result differs from the reference", case_name, method));
  rows_.push_back({{"case", case_name},
                   {"method", method},
                   {"median_s", s.median},
                   {"min_s", s.min},
                   {"max_s", s.max},
                   {"samples", s.samples},
                   {"work", work},
                   {"unit", unit},
                   {"rate", rate},
                   {"ok", ok},
                   {"extra", extra}});
}

bool Bench::goal(const std::string& what, double value, double goal, bool higher_is_better, const std::string& unit) {
  const bool pass = higher_is_better ? value >= goal : value <= goal;
  std::cout << fmt::format("SUMMARY|{}|{}|{:.3g}{}|{}{:.3g}{}|{}\n", name_, what, value, unit,
                           higher_is_better ? ">=" : "<=", goal, unit, pass ? "PASS" : "MISS");
  goals_.push_back({{"what", what},
                    {"value", value},
                    {"goal", goal},
                    {"higher_is_better", higher_is_better},
                    {"unit", unit},
                    {"pass", pass}});
  return pass;
}

void Bench::info(const std::string& what, double value, const std::string& unit) {
  std::cout << fmt::format("SUMMARY|{}|{}|{:.4g}{}|-|INFO\n", name_, what, value, unit);
  goals_.push_back({{"what", what}, {"value", value}, {"unit", unit}, {"info", true}});
}

void Bench::fail(const std::string& why) {
  failures_.push_back(why);
  std::cout << "CHECK FAILED: " << why << '\n';
}

int Bench::finish() {
  // An option no part of the run asked for is a typo or does not apply to what ran: say so.
  for (const auto& [key, value] : extra_)
    if (!read_.count(key)) std::cout << fmt::format("NOTE: option {} was not used by this run\n", key);
  if (!json_path_.empty()) {
    std::ofstream out(json_path_);
    out << nlohmann::json({{"bench", name_},
                           {"system", nlohmann::json(system_info())},
                           {"reps", reps_},
                           {"rows", rows_},
                           {"goals", goals_},
                           {"failures", failures_}})
               .dump(1)
        << '\n';
  }
  if (!failures_.empty()) {
    std::cout << fmt::format("SUMMARY|{}|result checks|{} failed|0|FAIL\n", name_, failures_.size());
    return 1;
  }
  return 0;
}

namespace {

// Runs `command` through the shell: its standard output, and pclose's status (-1: it could not run).
std::pair<int, std::string> read_command(const std::string& command) {
  std::string text;
  std::FILE* p = popen(command.c_str(), "r");
  if (!p) return {-1, text};
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p)) text += buf;
  return {pclose(p), text};
}

}  // namespace

CommandOutput run_command(const std::string& command) {
  auto [status, text] = read_command(command + " 2>&1");
  CommandOutput out;
  out.text = std::move(text);
  if (status != -1 && WIFEXITED(status)) out.status = WEXITSTATUS(status);
  return out;
}

nlohmann::json run_json_command(const std::string& what, const std::string& command) {
  auto [status, text] = read_command(command);
  if (status != 0) throw Error(fmt::format("{} run failed: {}\n{}", what, command, text));
  return nlohmann::json::parse(text);
}

std::string shell_quote(const std::string& text) {
  std::string q = "'";
  for (char c : text) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string duckdb_command(const std::string& node_script, const std::string& duckdb_lib, const char* argv0) {
  if (duckdb_lib.empty()) return "node " + shell_quote(node_script);
  return shell_quote((std::filesystem::path(argv0).parent_path() / "duckdb_groupby_csv").string()) + " --lib " +
         shell_quote(duckdb_lib);
}

}  // namespace tandem::bench
