// Choosing parameters by measurement, and remembering the choice.
//
// Tuner: time each candidate a few times, keep the median, pick the fastest, and report all.
// TuningCache: a versioned JSON file under $XDG_CACHE_HOME/tandem/ keyed by operation, device and
// problem class. A corrupt, unreadable or stale file is reported once and rebuilt; an entry its
// reader cannot parse counts as missing and is measured again; writers go through a temporary file
// and rename, so concurrent processes never leave a torn file. Safe to share between host threads.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "tandem/core/report.hpp"
#include "tandem/core/timing.hpp"

namespace tandem {

// lo, lo*ratio, lo*ratio^2, ... up to and including hi (hi is appended if the progression skips it).
std::vector<std::int64_t> geometric(std::int64_t lo, std::int64_t hi, double ratio = 2.0);

struct Candidate {
  std::string label;      // "threads=8"
  nlohmann::json params;  // {"threads": 8}
};

struct CandidateResult {
  Candidate candidate;
  Stats seconds;
  bool failed{false};
  std::string error;  // why a candidate could not run
};

struct TuneResult {
  std::vector<CandidateResult> results;
  std::size_t best{0};  // index into results
  const CandidateResult& winner() const { return results.at(best); }
  std::string report() const;  // one line per candidate, the winner marked
  nlohmann::json to_json() const;
};

class Tuner {
 public:
  Tuner& repetitions(int r) {
    reps_ = r;
    return *this;
  }
  Tuner& warmup(int w) {
    warmup_ = w;
    return *this;
  }

  // measure(candidate) runs the work once and returns its time in seconds (the caller decides how
  // to time: events on a GPU, a stopwatch on the CPU). A candidate that throws is marked failed;
  // if all fail, run() throws the last error.
  TuneResult run(const std::vector<Candidate>& candidates,
                 const std::function<double(const Candidate&)>& measure) const;

 private:
  int reps_{5};
  int warmup_{1};
};

class TuningCache {
 public:
  static constexpr int kVersion = 1;

  // The process-wide cache at default_path().
  static TuningCache& global();
  // $XDG_CACHE_HOME/tandem/tuning.json, else $HOME/.cache/tandem/tuning.json.
  static std::string default_path();

  explicit TuningCache(std::string path);

  std::optional<nlohmann::json> get(const std::string& op, const std::string& device, const std::string& problem_class);
  // The entry read by `parse` (json -> value), or nullopt when there is none. An entry that
  // `parse` rejects by throwing (a wrong JSON type, a missing field, a value out of range) counts
  // as missing: it is dropped, so the caller measures again and its put() replaces the entry in
  // the file, and a warning says so. Warnings not yet reported (this one, a corrupt file) are
  // noted in `report` when one is given.
  template <class Parse>
  auto lookup(const std::string& op, const std::string& device, const std::string& problem_class, Parse&& parse,
              Report* report = nullptr) -> std::optional<std::invoke_result_t<Parse&, const nlohmann::json&>> {
    std::optional<std::invoke_result_t<Parse&, const nlohmann::json&>> out;
    if (auto j = get(op, device, problem_class)) {
      try {
        out.emplace(parse(*j));
      } catch (const std::exception& e) {
        drop(op, device, problem_class, e.what());
      }
    }
    if (report) report_warnings(*report);
    return out;
  }
  // Stores and writes through to disk (merged with what other processes wrote meanwhile).
  void put(const std::string& op, const std::string& device, const std::string& problem_class,
           const nlohmann::json& value);
  void clear();
  // Forgets what was read (entries and warnings): the next access reads the file again.
  void reload();
  const std::string& path() const { return path_; }
  // Warnings about the file (corrupt, stale version, malformed entries), each once.
  std::vector<std::string> warnings() const;
  // Notes the warnings no report has received yet.
  void report_warnings(Report& report);

  static std::string key(const std::string& op, const std::string& device, const std::string& problem_class);

 private:
  nlohmann::json load_file();  // {} on any problem, with a warning
  void ensure_loaded();
  void warn(const std::string& msg);
  // Forgets a malformed entry (until put() stores a new one) with a warning naming it.
  void drop(const std::string& op, const std::string& device, const std::string& problem_class, const std::string& why);

  std::string path_;
  mutable std::mutex mu_;  // guards everything below
  bool loaded_{false};
  nlohmann::json entries_ = nlohmann::json::object();
  std::vector<std::string> warnings_;
  std::size_t reported_{0};        // warnings_[0, reported_) went into a report
  std::set<std::string> dropped_;  // malformed entries to leave out of the next write
};

// Field `name` of a cached entry as a number > 0 that T holds (an integer for integral T, finite
// for floating T); throws (for a lookup's parse) otherwise, never converting out of range.
template <class T = double>
T positive_field(const nlohmann::json& entry, const char* name) {
  const nlohmann::json& f = entry.at(name);
  bool ok = false;
  if constexpr (std::is_integral_v<T>) {
    const auto most = static_cast<std::uint64_t>(std::numeric_limits<T>::max());
    if (f.is_number_unsigned()) ok = f.template get<std::uint64_t>() >= 1 && f.template get<std::uint64_t>() <= most;
    else if (f.is_number_integer())
      ok = f.template get<std::int64_t>() >= 1 && static_cast<std::uint64_t>(f.template get<std::int64_t>()) <= most;
  } else {
    ok = f.is_number() && f.template get<double>() > 0 && std::isfinite(f.template get<double>());
  }
  if (!ok) throw std::out_of_range(std::string(name) + " = " + f.dump() + " is not a positive number of its type");
  return f.template get<T>();
}

// Size class used in cache keys: "2^k" for the power of two at or above n.
std::string size_class(std::uint64_t n);

}  // namespace tandem
