#include "groupby/sink/sliced_consume.hpp"

#include <algorithm>
#include <numeric>
#include <vector>

#include "tandem/core/parallel.hpp"

namespace tandem::sink {

void consume_in_slices(GroupBySink& sink, std::size_t& next_index, const Table& table, int threads) {
  const std::size_t n = table.rows();
  const std::size_t slices = std::clamp<std::size_t>(n / kSliceRows, 1, static_cast<std::size_t>(std::max(threads, 1)));
  if (slices == 1) {
    sink.consume(next_index++, table);
    return;
  }
  const std::size_t first = next_index;
  next_index += slices;
  parallel_for(slices, threads, [&](std::size_t s) {
    std::vector<std::size_t> rows(n * (s + 1) / slices - n * s / slices);
    std::iota(rows.begin(), rows.end(), n * s / slices);
    sink.consume(first + s, table.gather(rows));
  });
}

}  // namespace tandem::sink
