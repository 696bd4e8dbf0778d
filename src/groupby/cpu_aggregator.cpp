#include "groupby/cpu_aggregator.hpp"

#include <cstring>

namespace tandem::cpu_groupby {

Aggregator::Aggregator(Aggregation spec, const Column* input)
    : spec_(std::move(spec)), input_(input), names_(output_names(spec_)) {}

namespace {
std::size_t scattered_width(const Column& c) {
  return c.type == ColumnType::str ? sizeof(std::string_view) : value_width(c.type);
}
}  // namespace

ScatteredColumn::ScatteredColumn(const Column& c) : values(c.length * scattered_width(c)) {
  if (!c.validity.empty()) present.resize(c.length);
}

void ScatteredColumn::scatter(const Column& c, const std::uint32_t* pos, std::size_t begin, std::size_t end) {
  std::byte* out = values.data();
  const std::byte* in = c.values.data();
  if (c.type == ColumnType::str) {
    auto* views = reinterpret_cast<std::string_view*>(out);
    for (std::size_t i = begin; i < end; ++i) views[pos[i - begin]] = c.string(i);
  } else if (value_width(c.type) == 8) {
    for (std::size_t i = begin; i < end; ++i) std::memcpy(out + std::size_t{pos[i - begin]} * 8, in + i * 8, 8);
  } else {
    for (std::size_t i = begin; i < end; ++i) std::memcpy(out + std::size_t{pos[i - begin]} * 4, in + i * 4, 4);
  }
  if (!present.empty())
    for (std::size_t i = begin; i < end; ++i) present[pos[i - begin]] = c.present(i);
}

}  // namespace tandem::cpu_groupby
