// Wall-clock timing and the statistics every measurement reports.
#pragma once
#include <chrono>
#include <vector>

namespace tandem {

class Stopwatch {
 public:
  Stopwatch() : start_(clock::now()) {}
  void reset() { start_ = clock::now(); }
  double seconds() const { return std::chrono::duration<double>(clock::now() - start_).count(); }

 private:
  using clock = std::chrono::steady_clock;
  clock::time_point start_;
};

struct Stats {
  double median{0}, min{0}, max{0}, mean{0};
  int samples{0};
};

Stats summarize(std::vector<double> samples);  // empty input gives all zeros

// Times f() `reps` times after `warmup` untimed calls; returns the statistics in seconds.
template <class F>
Stats time_repeated(F&& f, int reps, int warmup = 1) {
  for (int i = 0; i < warmup; ++i) f();
  std::vector<double> s;
  s.reserve(reps);
  for (int i = 0; i < reps; ++i) {
    Stopwatch w;
    f();
    s.push_back(w.seconds());
  }
  return summarize(std::move(s));
}

}  // namespace tandem
