// Stage times of a distributed operation, and every rank's figures gathered into the Report.
#pragma once
#include <string>

#include "dist/context_impl.hpp"
#include "tandem/core/timing.hpp"

namespace tandem::dist {

// Adds a stage to the report for the time since the previous lap.
class StageClock {
 public:
  void lap(Report& r, std::string name, std::string detail = {}) {
    r.add(std::move(name), "cpu", watch_.seconds(), std::move(detail));
    watch_.reset();
  }
  void restart() { watch_.reset(); }  // after stages added with their own times

 private:
  Stopwatch watch_;
};

// Collective: puts, for every rank, its stage times, counts and bytes into
// report.details()["ranks"], and a note with the slowest rank of each stage. Every rank of one
// operation has run the same stages.
void gather_rank_report(const Context::Impl& s, DistReport& out);

}  // namespace tandem::dist
