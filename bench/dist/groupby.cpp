// bench_dist_groupby: dist::groupby of the db-benchmark questions q1, q3, q10 over P ranks, each
// holding 1/P of the rows, against the same group-by of all rows by rank 0 alone (its GPU, or
// its CPU threads), in the same run on the same generated table. Every rank generates its rows
// of the table (GroupByDataSpec::first_row), rank 0 the whole table too. The partitioned result
// is what is timed; one more call gathers it to rank 0, where it must equal rank 0's own answer.
// Run one rank per GPU:
//   NCCL_NVLS_ENABLE=0 mpirun -np 2 --bind-to none bench_dist_groupby --rows 100000000 --device gpu
// or CPU ranks sharing a host's cores: mpirun -np 4 bench_dist_groupby --device cpu --threads 4
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "mpi_bench.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/dist.hpp"

using namespace tandem;

namespace {

using tandem::bench::max_over_ranks;

struct Args {
  std::size_t rows{100'000'000};
  std::size_t k{100};
  int reps{3};
  int threads{0};
  std::string device{"gpu"};
  std::vector<std::string> questions{"q1", "q3", "q10"};
  bool one_rank{true};
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string x; std::getline(in, x, ',');) out.push_back(x);
  return out;
}

Args parse(int argc, char** argv) {
  const tandem::bench::Options o(argc, argv, "bench_dist_groupby",
                                 "[--rows N] [--k K] [--reps R] [--threads T per rank] [--device gpu|cpu|auto] "
                                 "[--questions q1,q3,q10] [--no-one-rank] [--quick]",
                                 {"--rows", "--k", "--reps", "--threads", "--device", "--questions"},
                                 {"--no-one-rank", "--quick"});
  Args a;
  const bool quick = o.has("--quick");
  a.rows = std::size_t(o.get_double("--rows", quick ? 1e6 : double(a.rows)));
  a.k = std::size_t(o.get_int("--k", (long long)a.k));
  a.reps = int(o.get_int("--reps", quick ? 2 : a.reps));
  a.threads = int(o.get_int("--threads", a.threads));
  a.device = o.get("--device", a.device);
  if (o.has("--questions")) a.questions = split(o.get("--questions", ""));
  a.one_rank = !o.has("--no-one-rank");
  return a;
}

struct Question {
  std::vector<std::string> by;
  const char* aggs;
};

Question question(const std::string& id) {
  if (id == "q1") return {{"id1"}, "sum(v1)"};
  if (id == "q2") return {{"id1", "id2"}, "sum(v1)"};
  if (id == "q3") return {{"id3"}, "sum(v1),mean(v3)"};
  if (id == "q5") return {{"id6"}, "sum(v1),sum(v2),sum(v3)"};
  if (id == "q10") return {{"id1", "id2", "id3", "id4", "id5", "id6"}, "sum(v3),count()"};
  throw UsageError(fmt::format("bench_dist_groupby: question {} (q1, q2, q3, q5, q10)", id));
}

// Empty when the tables agree: the same columns and rows, keys exactly, numbers to 1e-9 relative.
std::string compare(const Table& a, const Table& b) {
  if (a.rows() != b.rows() || a.num_columns() != b.num_columns())
    return fmt::format("{} rows x {} columns, one rank's {} x {}", a.rows(), a.num_columns(), b.rows(),
                       b.num_columns());
  for (std::size_t c = 0; c < a.num_columns(); ++c) {
    const Column &x = a.column(c), &y = b.column(c);
    if (x.type != y.type) return fmt::format("column {}: types differ", x.name);
    for (std::size_t i = 0; i < a.rows(); ++i) {
      if (x.present(i) != y.present(i)) return fmt::format("column {} row {}: missing on one side", x.name, i);
      if (!x.present(i)) continue;
      if (x.type == ColumnType::str) {
        if (x.string(i) != y.string(i))
          return fmt::format("column {} row {}: {} vs {}", x.name, i, x.string(i), y.string(i));
        continue;
      }
      const std::string bad = visit_numeric(x.type, [&](auto t) -> std::string {
        using T = decltype(t);
        const double u = double(x.numbers<T>()[i]), v = double(y.numbers<T>()[i]);
        if (std::fabs(u - v) <= 1e-9 * std::max({1.0, std::fabs(u), std::fabs(v)})) return {};
        return fmt::format("column {} row {}: {} vs {}", x.name, i, u, v);
      });
      if (!bad.empty()) return bad;
    }
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const Args a = parse(argc, argv);
  const int status = tandem::bench::run_reporting_errors("bench_dist_groupby", [&] {
    int status = 0;
    {
      dist::ContextOptions co;
      co.threads = a.threads;
      dist::Context ctx(MPI_COMM_WORLD, co);
      const int rank = ctx.rank(), size = ctx.size();
      Stopwatch w;
      const std::size_t begin = a.rows * std::size_t(rank) / std::size_t(size),
                        end = a.rows * std::size_t(rank + 1) / std::size_t(size);
      // This rank's rows of the one table; rank 0 also makes the whole table for its answer alone.
      const Table slice =
          generate_groupby_table({.rows = end - begin, .k = a.k, .first_row = begin, .total_rows = a.rows});
      const Table whole = a.one_rank && rank == 0 ? generate_groupby_table({.rows = a.rows, .k = a.k}) : Table();
      const double t_gen = max_over_ranks(w.seconds());
      GroupByOptions opts;
      opts.device = parse_device(a.device);
      opts.threads = ctx.threads();
      if (rank == 0)
        fmt::print(
            "bench_dist_groupby: {} rows, K = {}, {} ranks ({}), device {}, {} threads per rank; "
            "table made in {:.1f} s\n",
            a.rows, a.k, size, ctx.describe(), a.device, ctx.threads(), t_gen);
      for (const std::string& id : a.questions) {
        const Question q = question(id);
        const GroupBySpec spec{q.by, parse_aggregations(q.aggs)};
        std::vector<double> t_dist;
        nlohmann::json stages;
        for (int r = 0; r <= a.reps; ++r) {  // the first call warms up
          MPI_Barrier(MPI_COMM_WORLD);
          w.reset();
          const auto res = dist::groupby(ctx, slice, spec, opts);
          const double t = max_over_ranks(w.seconds());
          if (r > 0) t_dist.push_back(t);
          stages = res.report.report.details()["ranks"];
        }
        const auto gathered = dist::groupby(ctx, slice, spec, opts, true);
        Stats one{};
        std::string bad;
        if (a.one_rank && rank == 0) {
          std::vector<double> t_one;
          Table answer;
          GroupByOptions all = opts;
          all.threads = 0;  // the whole host's threads for one rank alone
          for (int r = 0; r <= a.reps; ++r) {
            w.reset();
            answer = tandem::groupby(whole, spec, all).table;
            if (r > 0) t_one.push_back(w.seconds());
          }
          one = summarize(t_one);
          bad = compare(gathered.table, answer);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
          const Stats d = summarize(t_dist);
          fmt::print("  {:<4} {} groups: dist::groupby {:.1f} ms (min {:.1f}, max {:.1f})", id, gathered.table.rows(),
                     d.median * 1e3, d.min * 1e3, d.max * 1e3);
          if (a.one_rank)
            fmt::print("; one rank alone {:.1f} ms: {:.2f}x; check {}", one.median * 1e3, one.median / d.median,
                       bad.empty() ? "ok" : bad);
          fmt::print("\n");
          for (const auto& x : stages) {
            std::string s;
            for (auto it = x["stages"].begin(); it != x["stages"].end(); ++it)
              s += fmt::format(" {} {:.1f}ms", it.key(), it.value().get<double>() * 1e3);
            fmt::print("    rank {}:{}\n", x["rank"].get<int>(), s);
          }
          if (a.one_rank && size > 1)
            fmt::print("SUMMARY|dist_groupby|{} {} ranks vs 1, {} rows, {}|{:.2f}x ({:.0f} ms)||{}\n", id, size, a.rows,
                       a.device, one.median / d.median, d.median * 1e3, bad.empty() ? "INFO" : "FAIL");
        }
        int failed = bad.empty() ? 0 : 1;
        MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (failed) status = 1;
      }
    }
    return status;
  });
  MPI_Finalize();
  return status;
}
