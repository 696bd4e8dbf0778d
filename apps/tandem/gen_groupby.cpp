// `tandem gen groupby`: the db-benchmark group-by data set as a CSV file.
#include <algorithm>
#include <memory>

#include <fmt/format.h>

#include "command.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/io.hpp"
#include "tandem/groupby.hpp"
#include "tandem/table/csv.hpp"

namespace {

struct GroupByDataArgs {
  long long rows{10'000'000};
  long long k{100};
  double nas{0};
  bool sorted{false};
  std::uint64_t seed{1};
  std::string delimiter{","};
  std::string out;
};

constexpr std::size_t kPieceRows = std::size_t{1} << 23;  // rows made and written at a time

char delimiter_of(const std::string& d) {
  if (d == "," || d == "comma") return ',';
  if (d == "\\t" || d == "\t" || d == "tab") return '\t';
  throw tandem::UsageError(fmt::format("--delimiter {}: expected ',' or '\\t'", d));
}

const bool gen_groupby = tandem::cli::register_generator(
    {"groupby", "The db-benchmark group-by data (id1..id6 keys, v1..v3 values) as CSV",
     [](CLI::App& app) -> std::function<int()> {
       auto a = std::make_shared<GroupByDataArgs>();
       app.add_option("--rows", a->rows, "Rows (1 to 2^31)")->capture_default_str();
       app.add_option("--k", a->k, "Distinct values of id1, id2, id4, id5 (id3, id6: rows / k)")->capture_default_str();
       app.add_option("--nas", a->nas, "Percent of missing values (0 to 100)")->capture_default_str();
       app.add_flag("--sorted", a->sorted, "Rows ordered by id1..id6");
       app.add_option("--seed", a->seed, "Random seed")->capture_default_str();
       app.add_option("--delimiter", a->delimiter, "',' or '\\t'")->capture_default_str();
       app.add_option("--out", a->out, "Output CSV file ('-' for standard output)")->required();
       return [a] {
         if (a->rows < 1 || a->rows > (1ll << 31))
           throw tandem::UsageError(fmt::format("--rows {}: expected 1 to 2^31", a->rows));
         if (a->k < 1 || a->k > 1'000'000'000)
           throw tandem::UsageError(fmt::format("--k {}: expected 1 to 10^9", a->k));
         if (!(a->nas >= 0 && a->nas <= 100))
           throw tandem::UsageError(fmt::format("--nas {}: expected 0 to 100", a->nas));
         const char delimiter = delimiter_of(a->delimiter);
         tandem::GroupByDataSpec spec{.rows = static_cast<std::size_t>(a->rows),
                                      .k = static_cast<std::size_t>(a->k),
                                      .nas_percent = a->nas,
                                      .sorted = a->sorted,
                                      .seed = a->seed};
         tandem::io::AtomicOutput out(a->out);
         if (spec.sorted || spec.rows <= kPieceRows) {
           tandem::write_csv(out.stream(), tandem::generate_groupby_table(spec), delimiter);
         } else {
           // Made and written a share at a time (the same table), so that 10^9 rows need no
           // table of 10^9 rows in memory.
           const std::size_t total = spec.rows;
           spec.total_rows = total;
           for (std::size_t first = 0; first < total; first += kPieceRows) {
             spec.first_row = first;
             spec.rows = std::min(kPieceRows, total - first);
             const auto piece = tandem::generate_groupby_table(spec);
             if (first == 0) tandem::write_csv(out.stream(), piece, delimiter);
             else tandem::write_csv_rows(out.stream(), piece, delimiter);
           }
         }
         out.commit();
         return 0;
       };
     }});

}  // namespace
