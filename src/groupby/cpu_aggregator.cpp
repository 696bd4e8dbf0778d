#include "groupby/cpu_aggregator.hpp"

#include <cstring>

namespace tandem::cpu_groupby {

Aggregator::Aggregator(Aggregation spec, const Column* input)
    : spec_(std::move(spec)), input_(input), names_(output_names(spec_)) {}

ScatteredColumn scatter_column(const Column& c, const std::uint32_t* pos, std::size_t n, int threads) {
  ScatteredColumn s;
  const bool strings = c.type == ColumnType::str;
  const std::size_t width = strings ? sizeof(std::string_view) : value_width(c.type);
  s.values.resize(n * width);
  if (!c.validity.empty()) s.present.resize(n);
  std::byte* out = s.values.data();
  const std::byte* in = c.values.data();
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::size_t i = 0; i < n; ++i) {
    if (strings) {
      const std::string_view v = c.string(i);
      std::memcpy(out + std::size_t{pos[i]} * width, &v, sizeof v);
    } else if (width == 8) {
      std::memcpy(out + std::size_t{pos[i]} * 8, in + i * 8, 8);
    } else {
      std::memcpy(out + std::size_t{pos[i]} * 4, in + i * 4, 4);
    }
    if (!s.present.empty()) s.present[pos[i]] = c.present(i);
  }
  return s;
}

}  // namespace tandem::cpu_groupby
