#include "dist/rank_report.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "dist/mpi_check.hpp"

namespace tandem::dist {

void gather_rank_report(const Context::Impl& s, DistReport& out) {
  const auto& stages = out.report.stages;
  std::vector<double> mine;
  for (const auto& st : stages) mine.push_back(st.seconds);
  mine.push_back(double(out.count_in));
  mine.push_back(double(out.count_out));
  mine.push_back(double(out.traffic.bytes_sent));
  mine.push_back(double(out.traffic.bytes_received));
  const std::size_t width = mine.size();
  std::vector<double> all(width * std::size_t(s.size));
  check_mpi(MPI_Allgather(mine.data(), int(width), MPI_DOUBLE, all.data(), int(width), MPI_DOUBLE, s.comm),
            "MPI_Allgather");
  nlohmann::json ranks = nlohmann::json::array();
  for (int r = 0; r < s.size; ++r) {
    const double* v = all.data() + std::size_t(r) * width;
    nlohmann::json st = nlohmann::json::object();
    for (std::size_t i = 0; i < stages.size(); ++i) st[stages[i].name] = v[i];
    const std::size_t k = stages.size();
    ranks.push_back({{"rank", r},
                     {"stages", st},
                     {"count_in", std::uint64_t(v[k])},
                     {"count_out", std::uint64_t(v[k + 1])},
                     {"bytes_sent", std::uint64_t(v[k + 2])},
                     {"bytes_received", std::uint64_t(v[k + 3])}});
  }
  out.report.details()["ranks"] = std::move(ranks);
  for (std::size_t i = 0; i < stages.size(); ++i) {
    int slowest = 0;
    for (int r = 1; r < s.size; ++r)
      if (all[std::size_t(r) * width + i] > all[std::size_t(slowest) * width + i]) slowest = r;
    out.report.note(
        fmt::format("{}: slowest rank {} ({:.3f} s)", stages[i].name, slowest, all[std::size_t(slowest) * width + i]));
  }
  for (auto& st : out.report.stages) st.where = fmt::format("rank {}", s.rank);
}

}  // namespace tandem::dist
