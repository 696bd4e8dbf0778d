#include "dist/exchange.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "dist/mpi_check.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/core/timing.hpp"

namespace tandem::dist {
namespace {
constexpr std::uint64_t kPiece = std::uint64_t{1} << 30;  // bytes per message, well inside int
}

void add_exchange_stages(Report& report, const ExchangeTimes& times, const Traffic& traffic) {
  report.add("exchange counts", "cpu", times.counts, "block sizes all-to-all");
  report.add("exchange buffer", "cpu", times.buffer, "receive buffer: allocation and page faults");
  report.add("exchange data", "cpu", times.data,
             fmt::format("{} B sent, {} B received", traffic.bytes_sent, traffic.bytes_received));
  report.details()["exchange"] = {{"bytes_to", times.bytes_to}, {"bytes_from", times.bytes_from}};
}

Traffic exchange_bytes(const Context::Impl& s, const std::byte* send, std::span<const std::uint64_t> counts,
                       std::vector<std::uint64_t>& recv_counts,
                       const std::function<std::byte*(std::uint64_t)>& allocate, ExchangeTimes* times) {
  Stopwatch watch;
  auto lap = [&](double ExchangeTimes::*field) {
    if (times) times->*field += watch.seconds();
    watch.reset();
  };
  const int p = s.size;
  if (int(counts.size()) != p) throw UsageError(fmt::format("exchange: {} block sizes for {} ranks", counts.size(), p));
  Traffic traffic;
  recv_counts.assign(std::size_t(p), 0);
  check_mpi(MPI_Alltoall(counts.data(), 1, MPI_UINT64_T, recv_counts.data(), 1, MPI_UINT64_T, s.comm), "MPI_Alltoall");
  std::vector<std::uint64_t> send_at(std::size_t(p) + 1, 0), recv_at(std::size_t(p) + 1, 0);
  for (int r = 0; r < p; ++r) {
    send_at[r + 1] = send_at[r] + counts[r];
    recv_at[r + 1] = recv_at[r] + recv_counts[r];
  }
  // The agreement on the path (below) belongs to the counts' round.
  constexpr std::uint64_t kIntMax = std::uint64_t(std::numeric_limits<int>::max());
  int small = send_at[p] <= kIntMax && recv_at[p] <= kIntMax ? 1 : 0, all_small = 0;
  check_mpi(MPI_Allreduce(&small, &all_small, 1, MPI_INT, MPI_MIN, s.comm), "MPI_Allreduce");
  if (times) {
    times->bytes_to.resize(std::size_t(p));
    times->bytes_from.resize(std::size_t(p));
    for (int r = 0; r < p; ++r) times->bytes_to[r] += counts[r], times->bytes_from[r] += recv_counts[r];
  }
  lap(&ExchangeTimes::counts);
  std::byte* recv = allocate(recv_at[p]);
  lap(&ExchangeTimes::buffer);
  // The common case, every count and offset inside MPI's int: one MPI_Alltoallv, MPI's own
  // tuned all-to-all. Larger blocks go as 1 GiB pieces through MPI_Isend/MPI_Irecv below.
  if (all_small) {
    const auto np = static_cast<std::size_t>(p);
    std::vector<int> sc(np), sd(np), rc(np), rd(np);
    for (int r = 0; r < p; ++r) {
      sc[r] = int(counts[r]), sd[r] = int(send_at[r]), rc[r] = int(recv_counts[r]), rd[r] = int(recv_at[r]);
      if (r != s.rank) traffic.bytes_sent += counts[r], traffic.bytes_received += recv_counts[r];
    }
    // The own block on the rank's threads (MPI would copy it on one), then the others through MPI.
    sc[s.rank] = rc[s.rank] = 0;
    parallel_copy(recv + recv_at[s.rank], send + send_at[s.rank], counts[s.rank], s.threads);
    check_mpi(MPI_Alltoallv(send, sc.data(), sd.data(), MPI_BYTE, recv, rc.data(), rd.data(), MPI_BYTE, s.comm),
              "MPI_Alltoallv");
    lap(&ExchangeTimes::data);
    return traffic;
  }
  std::vector<MPI_Request> requests;
  auto post = [&](std::uint64_t bytes, auto&& start) {
    for (std::uint64_t at = 0, piece = 0; at < bytes; at += kPiece, ++piece) {
      requests.emplace_back();
      check_mpi(start(at, int(std::min(kPiece, bytes - at)), int(piece % 32000), &requests.back()),
                "MPI_Isend/MPI_Irecv");
    }
  };
  // Receives first, then sends, each starting at the next rank so that not every rank sends to
  // rank 0 at once.
  for (int i = 1; i < p; ++i) {
    const int from = (s.rank - i + p) % p;
    post(recv_counts[from], [&](std::uint64_t at, int n, int tag, MPI_Request* q) {
      return MPI_Irecv(recv + recv_at[from] + at, n, MPI_BYTE, from, tag, s.comm, q);
    });
    traffic.bytes_received += recv_counts[from];
  }
  for (int i = 1; i < p; ++i) {
    const int to = (s.rank + i) % p;
    post(counts[to], [&](std::uint64_t at, int n, int tag, MPI_Request* q) {
      return MPI_Isend(send + send_at[to] + at, n, MPI_BYTE, to, tag, s.comm, q);
    });
    traffic.bytes_sent += counts[to];
  }
  if (counts[s.rank] > 0) parallel_copy(recv + recv_at[s.rank], send + send_at[s.rank], counts[s.rank], s.threads);
  if (!requests.empty())
    check_mpi(MPI_Waitall(int(requests.size()), requests.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
  lap(&ExchangeTimes::data);
  return traffic;
}

}  // namespace tandem::dist
