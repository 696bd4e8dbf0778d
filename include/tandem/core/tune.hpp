// Choosing parameters by measurement, and remembering the choice.
//
// Tuner: time each candidate a few times, keep the median, pick the fastest, and report all.
// TuningCache: a versioned JSON file under $XDG_CACHE_HOME/tandem/ keyed by operation, device and
// problem class. A corrupt, unreadable or stale file is reported once and rebuilt; writers go
// through a temporary file and rename, so concurrent processes never leave a torn file.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tandem/core/timing.hpp"

namespace tandem {

// lo, lo*ratio, lo*ratio^2, ... up to and including hi (hi is appended if the progression skips it).
std::vector<std::int64_t> geometric(std::int64_t lo, std::int64_t hi, double ratio = 2.0);

struct Candidate {
  std::string label;     // "threads=8"
  nlohmann::json params; // {"threads": 8}
};

struct CandidateResult {
  Candidate candidate;
  Stats seconds;
  bool failed{false};
  std::string error;     // why a candidate could not run
};

struct TuneResult {
  std::vector<CandidateResult> results;
  std::size_t best{0};   // index into results
  const CandidateResult& winner() const { return results.at(best); }
  std::string report() const;  // one line per candidate, the winner marked
  nlohmann::json to_json() const;
};

class Tuner {
 public:
  Tuner& repetitions(int r) { reps_ = r; return *this; }
  Tuner& warmup(int w) { warmup_ = w; return *this; }

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

  std::optional<nlohmann::json> get(const std::string& op, const std::string& device,
                                    const std::string& problem_class);
  // Stores and writes through to disk (merged with what other processes wrote meanwhile).
  void put(const std::string& op, const std::string& device, const std::string& problem_class,
           const nlohmann::json& value);
  void clear();
  const std::string& path() const { return path_; }
  // Warnings about the file (corrupt, stale version) collected while loading, each once (the
  // library does not print them; the CLI does).
  const std::vector<std::string>& warnings() const { return warnings_; }

  static std::string key(const std::string& op, const std::string& device, const std::string& problem_class);

 private:
  nlohmann::json load_file();  // {} on any problem, with a warning
  void ensure_loaded();
  void warn(const std::string& msg);

  std::string path_;
  bool loaded_{false};
  nlohmann::json entries_ = nlohmann::json::object();
  std::vector<std::string> warnings_;
};

// Size class used in cache keys: "2^k" for the power of two at or above n.
std::string size_class(std::uint64_t n);

}  // namespace tandem
