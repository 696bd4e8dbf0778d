#include "tandem/core/tune.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tandem/core/error.hpp"
#include "tandem/core/format.hpp"

namespace tandem {

std::vector<std::int64_t> geometric(std::int64_t lo, std::int64_t hi, double ratio) {
  if (lo <= 0 || hi < lo || ratio <= 1.0)
    throw UsageError(
        fmt::format("geometric progression needs 0 < lo <= hi and ratio > 1 (got {}, {}, {})", lo, hi, ratio));
  std::vector<std::int64_t> v;
  double x = static_cast<double>(lo);
  while (std::llround(x) <= hi) {
    const auto r = std::llround(x);
    if (v.empty() || r != v.back()) v.push_back(r);
    x *= ratio;
  }
  if (v.back() != hi) v.push_back(hi);
  return v;
}

TuneResult Tuner::run(const std::vector<Candidate>& candidates,
                      const std::function<double(const Candidate&)>& measure) const {
  if (candidates.empty()) throw UsageError("tuner: no candidates to measure");
  TuneResult out;
  std::string last_error;
  bool any = false;
  for (const auto& c : candidates) {
    CandidateResult r{c, {}, false, {}};
    try {
      for (int i = 0; i < warmup_; ++i) measure(c);
      std::vector<double> s;
      for (int i = 0; i < std::max(1, reps_); ++i) s.push_back(measure(c));
      r.seconds = summarize(std::move(s));
      if (!any || r.seconds.median < out.results[out.best].seconds.median) out.best = out.results.size();
      any = true;
    } catch (const std::exception& e) {
      r.failed = true;
      r.error = e.what();
      last_error = e.what();
    }
    out.results.push_back(std::move(r));
  }
  if (!any) throw Error("tuner: every candidate failed; last error: " + last_error);
  return out;
}

std::string TuneResult::report() const {
  std::string s;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    if (r.failed) s += fmt::format("    {:<28} failed: {}\n", r.candidate.label, r.error);
    else
      s += fmt::format("  {} {:<28} median {:>10}  min {:>10}  max {:>10}\n", i == best ? '*' : ' ', r.candidate.label,
                       human_seconds(r.seconds.median), human_seconds(r.seconds.min), human_seconds(r.seconds.max));
  }
  return s;
}

nlohmann::json TuneResult::to_json() const {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& r : results)
    arr.push_back({{"label", r.candidate.label},
                   {"params", r.candidate.params},
                   {"failed", r.failed},
                   {"error", r.error},
                   {"median_s", r.seconds.median},
                   {"min_s", r.seconds.min},
                   {"max_s", r.seconds.max}});
  return {{"best", results.at(best).candidate.label},
          {"best_params", results.at(best).candidate.params},
          {"candidates", arr}};
}

std::string size_class(std::uint64_t n) {
  if (n <= 1) return "2^0";
  return fmt::format("2^{}", std::bit_width(n - 1));
}

TuningCache& TuningCache::global() {
  static TuningCache cache(default_path());
  return cache;
}

std::string TuningCache::default_path() {
  std::string base;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) base = x;
  else if (const char* h = std::getenv("HOME"); h && *h) base = std::string(h) + "/.cache";
  else base = "/tmp";
  return base + "/tandem/tuning.json";
}

TuningCache::TuningCache(std::string path) : path_(std::move(path)) {}

std::string TuningCache::key(const std::string& op, const std::string& device, const std::string& problem_class) {
  return op + "|" + device + "|" + problem_class;
}

// Callers hold mu_.
void TuningCache::warn(const std::string& msg) {
  for (const auto& w : warnings_)
    if (w == msg) return;
  warnings_.push_back(msg);
}

std::vector<std::string> TuningCache::warnings() const {
  std::lock_guard lock(mu_);
  return warnings_;
}

void TuningCache::report_warnings(Report& report) {
  std::lock_guard lock(mu_);
  for (; reported_ < warnings_.size(); ++reported_) report.note(warnings_[reported_]);
}

void TuningCache::drop(const std::string& op, const std::string& device, const std::string& problem_class,
                       const std::string& why) {
  std::lock_guard lock(mu_);
  const std::string k = key(op, device, problem_class);
  entries_.erase(k);
  dropped_.insert(k);
  warn(fmt::format("tuning cache {}: entry {} is malformed ({}); measuring again", path_, k, why));
}

nlohmann::json TuningCache::load_file() {
  std::ifstream in(path_);
  if (!in) return nlohmann::json::object();  // absent: nothing to say
  nlohmann::json j;
  try {
    in >> j;
  } catch (const std::exception&) {
    warn(fmt::format("tuning cache {} is corrupt; rebuilding it", path_));
    return nlohmann::json::object();
  }
  if (!j.is_object() || !j.contains("version") || !j.contains("entries") || !j["entries"].is_object()) {
    warn(fmt::format("tuning cache {} has an unknown layout; rebuilding it", path_));
    return nlohmann::json::object();
  }
  if (j["version"] != kVersion) {
    warn(fmt::format("tuning cache {} is from version {} (this is {}); rebuilding it", path_, j["version"].dump(),
                     kVersion));
    return nlohmann::json::object();
  }
  return j["entries"];
}

void TuningCache::ensure_loaded() {
  if (loaded_) return;
  entries_ = load_file();
  loaded_ = true;
}

std::optional<nlohmann::json> TuningCache::get(const std::string& op, const std::string& device,
                                               const std::string& problem_class) {
  std::lock_guard lock(mu_);
  ensure_loaded();
  auto it = entries_.find(key(op, device, problem_class));
  if (it == entries_.end()) return std::nullopt;
  return *it;
}

void TuningCache::put(const std::string& op, const std::string& device, const std::string& problem_class,
                      const nlohmann::json& value) {
  std::lock_guard lock(mu_);
  ensure_loaded();
  const std::string k = key(op, device, problem_class);
  entries_[k] = value;
  std::error_code ec;
  const auto dir = std::filesystem::path(path_).parent_path();
  std::filesystem::create_directories(dir, ec);
  // A lock file serialises read-merge-write between processes; the rename keeps readers safe.
  const std::string lock_path = path_ + ".lock";
  int lock_fd = ::open(lock_path.c_str(), O_CREAT | O_RDWR, 0644);
  if (lock_fd >= 0) ::flock(lock_fd, LOCK_EX);
  nlohmann::json merged = load_file();
  for (const auto& kk : dropped_) merged.erase(kk);  // malformed entries leave the file
  for (auto& [kk, v] : entries_.items()) merged[kk] = v;
  entries_ = merged;
  const nlohmann::json doc = {{"version", kVersion}, {"entries", entries_}};
  std::random_device rd;
  const std::string tmp = fmt::format("{}.tmp-{}-{:x}", path_, ::getpid(), rd());
  bool ok = false;
  {
    std::ofstream out(tmp);
    if (out) {
      out << doc.dump(1) << '\n';
      out.flush();
      ok = static_cast<bool>(out);
    }
  }
  if (ok) ok = std::rename(tmp.c_str(), path_.c_str()) == 0;
  if (ok) dropped_.clear();
  if (!ok) {
    std::remove(tmp.c_str());
    warn(fmt::format("cannot write tuning cache {}; results are kept for this run only", path_));
  }
  if (lock_fd >= 0) {
    ::flock(lock_fd, LOCK_UN);
    ::close(lock_fd);
  }
}

void TuningCache::reload() {
  std::lock_guard lock(mu_);
  loaded_ = false;
  entries_ = nlohmann::json::object();
  warnings_.clear();
  reported_ = 0;
}

void TuningCache::clear() {
  std::lock_guard lock(mu_);
  entries_ = nlohmann::json::object();
  loaded_ = true;
  std::remove(path_.c_str());
}

}  // namespace tandem
