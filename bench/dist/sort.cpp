// bench_dist_sort: the distributed sort against its floors, measured in the same run on the same
// data: MPI_Alltoall of the same bytes (the exchange floor), MPI_Alltoallv of the sort's own block
// sizes, and the local sort of each rank's keys. The exchange is shown split into its sub-stages
// (block sizes, receive buffer, data), also for the first, cold call. Run as an MPI job, e.g. on one 16-core host:
//   mpirun -np 4 --bind-to none bench_dist_sort --log2 28 --threads 4
// Goals (issue 20): exchange bandwidth >= 0.8x MPI_Alltoall's; total <= 1.3x (local sort + exchange
// floor). The result is checked: every slice sorted, slices in order, N keys in all, balanced.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "mpi_bench.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/dist.hpp"

namespace {

using tandem::bench::max_over_ranks;

struct Args {
  int log2{24};
  int reps{3};
  int threads{0};
  long long keep{-1};  // ContextOptions::keep_receive_bytes; -1: its default
  std::string device{"cpu"};
  std::string label;
};

Args parse(int argc, char** argv) {
  const tandem::bench::Options o(
      argc, argv, "bench_dist_sort",
      "[--log2 N (total keys 2^N)] [--reps R] [--threads T per rank] [--device cpu|gpu|auto] [--label TEXT] "
      "[--keep-receive-bytes B (kept between calls; 0: every exchange into fresh memory)]",
      {"--log2", "--reps", "--threads", "--device", "--keep-receive-bytes", "--label"}, {});
  Args a;
  a.log2 = int(o.get_int("--log2", a.log2));
  a.reps = int(o.get_int("--reps", a.reps));
  a.threads = int(o.get_int("--threads", a.threads));
  a.device = o.get("--device", a.device);
  a.keep = o.get_int("--keep-receive-bytes", a.keep);
  a.label = o.get("--label", a.label);
  return a;
}

// The exchange's sub-stages, each the slowest rank's, and the slowest rank's whole exchange.
struct ExchangeSplit {
  double counts{0}, buffer{0}, data{0}, total{0};
};

ExchangeSplit exchange_split(const nlohmann::json& ranks) {
  ExchangeSplit m;
  auto at = [](const nlohmann::json& st, const char* name) { return st.contains(name) ? st[name].get<double>() : 0.0; };
  for (const auto& x : ranks) {
    const auto& st = x["stages"];
    const double c = at(st, "exchange counts"), b = at(st, "exchange buffer"), d = at(st, "exchange data");
    m.counts = std::max(m.counts, c);
    m.buffer = std::max(m.buffer, b);
    m.data = std::max(m.data, d);
    m.total = std::max(m.total, c + b + d);
  }
  return m;
}

// Each field's median over the repetitions.
ExchangeSplit median_split(const std::vector<ExchangeSplit>& v) {
  auto med = [&](double ExchangeSplit::*f) {
    std::vector<double> x;
    for (const auto& s : v) x.push_back(s.*f);
    return tandem::summarize(x).median;
  };
  return {med(&ExchangeSplit::counts), med(&ExchangeSplit::buffer), med(&ExchangeSplit::data),
          med(&ExchangeSplit::total)};
}

void print_split(const char* what, const ExchangeSplit& s) {
  fmt::print("  {:<38} {:>9.1f}ms  ({:.1f} + {:.1f} + {:.1f} ms)\n", what, s.total * 1e3, s.counts * 1e3,
             s.buffer * 1e3, s.data * 1e3);
}

// MPI_Alltoallv of the bytes the sort sent to and received from each rank (its report's
// details()["exchange"]), on buffers kept between calls; the slowest rank's seconds.
double alltoallv_floor(const nlohmann::json& exchange, std::vector<std::byte>& send, std::vector<std::byte>& recv,
                       MPI_Comm comm) {
  const auto to = exchange["bytes_to"].get<std::vector<std::uint64_t>>();
  const auto from = exchange["bytes_from"].get<std::vector<std::uint64_t>>();
  std::vector<int> sc, sd, rc, rd;
  std::uint64_t s = 0, r = 0;
  for (std::size_t i = 0; i < to.size(); ++i) {
    sc.push_back(int(to[i])), sd.push_back(int(s)), s += to[i];
    rc.push_back(int(from[i])), rd.push_back(int(r)), r += from[i];
  }
  if (send.size() < s) send.resize(s, std::byte{1});  // written: warm, as the MPI_Alltoall floor's
  if (recv.size() < r) recv.resize(r, std::byte{1});
  MPI_Barrier(comm);
  tandem::Stopwatch w;
  MPI_Alltoallv(send.data(), sc.data(), sd.data(), MPI_BYTE, recv.data(), rc.data(), rd.data(), MPI_BYTE, comm);
  return max_over_ranks(w.seconds(), comm);
}

// Sorted within, in order across ranks, the right total, one element of balance.
bool check(const std::vector<std::uint32_t>& keys, std::uint64_t total, int rank, int size, MPI_Comm comm) {
  int ok = std::is_sorted(keys.begin(), keys.end()) ? 1 : 0;
  std::uint64_t n = keys.size(), sum = 0;
  MPI_Allreduce(&n, &sum, 1, MPI_UINT64_T, MPI_SUM, comm);
  ok &= sum == total;
  const std::uint64_t want =
      total * std::uint64_t(rank + 1) / std::uint64_t(size) - total * std::uint64_t(rank) / std::uint64_t(size);
  ok &= n == want;
  std::uint32_t last = keys.empty() ? 0 : keys.back(), prev_last = 0;
  MPI_Sendrecv(&last, 1, MPI_UINT32_T, (rank + 1) % size, 0, &prev_last, 1, MPI_UINT32_T, (rank + size - 1) % size, 0,
               comm, MPI_STATUS_IGNORE);
  if (rank > 0 && !keys.empty()) ok &= prev_last <= keys.front();
  int all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
  return all == 1;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const Args a = parse(argc, argv);
  const int status = tandem::bench::run_reporting_errors("bench_dist_sort", [&] {
    int status = 0;
    {
      tandem::dist::ContextOptions context_options;
      if (a.keep >= 0) context_options.keep_receive_bytes = std::uint64_t(a.keep);
      tandem::dist::Context ctx(MPI_COMM_WORLD, context_options);
      const int rank = ctx.rank(), size = ctx.size();
      const std::uint64_t total = std::uint64_t{1} << a.log2;
      const std::size_t n = std::size_t(total * std::uint64_t(rank + 1) / std::uint64_t(size) -
                                        total * std::uint64_t(rank) / std::uint64_t(size));
      std::vector<std::uint32_t> input(n);
      std::mt19937 rng(17u + unsigned(rank));
      for (auto& k : input) k = rng();
      tandem::SortOptions opts;
      opts.threads = a.threads;
      opts.device = tandem::parse_device(a.device);

      // Floor 1: the same bytes through MPI_Alltoall (each rank sends n/size keys to every rank).
      const int block = int(n / std::size_t(size));
      std::vector<std::uint32_t> send(std::size_t(block) * std::size_t(size)), recv(send.size());
      // Floor 1b: MPI_Alltoallv with the sort's own (uneven) block sizes, on buffers as warm.
      std::vector<std::byte> send_v, recv_v;
      std::vector<double> a2a, a2av, local, dist;
      std::vector<ExchangeSplit> splits;
      ExchangeSplit first_call;
      nlohmann::json last_report;
      bool ok = true;
      for (int r = 0; r < a.reps + 1; ++r) {  // the first round warms up
        MPI_Barrier(ctx.comm());
        tandem::Stopwatch w;
        MPI_Alltoall(send.data(), block, MPI_UINT32_T, recv.data(), block, MPI_UINT32_T, ctx.comm());
        const double t_a2a = max_over_ranks(w.seconds(), ctx.comm());
        // Floor 2: the local sort of this rank's keys (what each rank does anyway).
        auto keys = input;
        MPI_Barrier(ctx.comm());
        w.reset();
        tandem::sort(std::span<std::uint32_t>(keys), opts);
        const double t_local = max_over_ranks(w.seconds(), ctx.comm());
        keys = input;
        MPI_Barrier(ctx.comm());
        w.reset();
        const auto rep = tandem::dist::sort(ctx, keys, opts);
        const double t_dist = max_over_ranks(w.seconds(), ctx.comm());
        ok = ok && check(keys, total, rank, size, ctx.comm());
        const double t_a2av =
            size > 1 ? alltoallv_floor(rep.report.details()["exchange"], send_v, recv_v, ctx.comm()) : 0;
        const ExchangeSplit split = exchange_split(rep.report.details()["ranks"]);
        if (r == 0) {
          first_call = split;
          continue;
        }
        a2a.push_back(t_a2a);
        a2av.push_back(t_a2av);
        local.push_back(t_local);
        dist.push_back(t_dist);
        splits.push_back(split);
        last_report = rep.report.details()["ranks"];
      }
      const double m_a2a = tandem::summarize(a2a).median, m_a2av = tandem::summarize(a2av).median,
                   m_local = tandem::summarize(local).median;
      const tandem::Stats s_dist = tandem::summarize(dist);
      const ExchangeSplit mid = median_split(splits);
      const double exchange = std::max(mid.total, 1e-9);                       // one rank exchanges nothing
      const double bytes = double(n) * 4.0 * double(size - 1) / double(size);  // per rank, off-rank
      if (rank == 0) {
        fmt::print("bench_dist_sort: 2^{} u32 keys over {} ranks ({} threads each, device {}), {} reps, check {}\n",
                   a.log2, size, a.threads ? a.threads : tandem::default_threads(), a.device, a.reps,
                   ok ? "ok" : "FAILED");
        fmt::print("  {:<38} {:>10}\n", "what", "median");
        fmt::print("  {:<38} {:>9.1f}ms  ({:.2f} GB/s per rank)\n", "MPI_Alltoall, same bytes", m_a2a * 1e3,
                   bytes / m_a2a / 1e9);
        if (size > 1)
          fmt::print("  {:<38} {:>9.1f}ms  ({:.2f} GB/s per rank)\n", "MPI_Alltoallv, the sort's block sizes",
                     m_a2av * 1e3, bytes / m_a2av / 1e9);
        fmt::print("  {:<38} {:>9.1f}ms\n", "local sort of each rank's keys", m_local * 1e3);
        fmt::print("  {:<38} {:>9.1f}ms  (min {:.1f}, max {:.1f})\n", "dist::sort", s_dist.median * 1e3,
                   s_dist.min * 1e3, s_dist.max * 1e3);
        if (size > 1) {
          fmt::print("  {:<38} {:>9.1f}ms  ({:.2f} GB/s per rank)\n", "  its exchange (slowest rank)", exchange * 1e3,
                     bytes / exchange / 1e9);
          print_split("    counts / buffer / data, slowest rank", mid);
          print_split("    the same in the first, cold call", first_call);
        }
        for (const auto& x : last_report) {
          std::string stages;
          for (auto it = x["stages"].begin(); it != x["stages"].end(); ++it)
            stages += fmt::format(" {} {:.1f}ms", it.key(), it.value().get<double>() * 1e3);
          fmt::print("    rank {}:{}\n", x["rank"].get<int>(), stages);
        }
        if (size > 1)
          fmt::print("  exchange / MPI_Alltoall bandwidth: {:.2f}x (goal >= 0.8); / MPI_Alltoallv: {:.2f}x\n",
                     m_a2a / exchange, m_a2av / exchange);
        const double bw = m_a2a / exchange, total_ratio = s_dist.median / (m_local + m_a2a);
        fmt::print("  dist::sort / (local sort + exchange floor): {:.2f}x (goal <= 1.3)\n", total_ratio);
        // Rows of the gpu-check summary table.
        const std::string who = a.label.empty() ? fmt::format("{} ranks", size) : a.label;
        if (size > 1)
          fmt::print("SUMMARY|dist_sort|{}: exchange / MPI_Alltoall bandwidth|{:.2f}x|>= 0.8x|{}\n", who, bw,
                     bw >= 0.8 ? "ok" : "MISS");
        fmt::print("SUMMARY|dist_sort|{}: 2^{} total / (local + exchange)|{:.2f}x ({:.0f} ms)|<= 1.3x|{}\n", who,
                   a.log2, total_ratio, s_dist.median * 1e3, total_ratio <= 1.3 ? "ok" : "MISS");
        if (!ok) fmt::print("SUMMARY|dist_sort|{}: result check|FAILED||FAIL\n", who);
      }
      status = ok ? 0 : 1;
    }
    return status;
  });
  MPI_Finalize();
  return status;
}
