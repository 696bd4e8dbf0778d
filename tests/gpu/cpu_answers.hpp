// What the GPU tests compare against: the CPU engine's group-by and word count of the same input,
// and where two group-bys differ.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/engine_groupby.hpp"
#include "tandem/core/device.hpp"
#include "tandem/mapreduce.hpp"

namespace tandem::test {

// Count, sum, min and max of i64 values by u32 key on the CPU.
inline engine_test::GroupBy cpu_groupby(const std::vector<std::uint32_t>& keys,
                                        const std::vector<std::int64_t>& values) {
  engine_test::Options cpu;
  cpu.device = Device::cpu;
  return engine_test::groupby(DType::u32, keys.data(), keys.size(), DType::i64, values.data(), values.size(), true,
                              cpu);
}

inline mapreduce::WordCount cpu_wordcount(std::string_view text) {
  mapreduce::WordCountOptions wc;
  wc.engine.device = Device::cpu;
  return mapreduce::wordcount(text, wc);
}

// Empty when equal in keys, counts and integer aggregates; else the first difference.
inline std::string group_difference(const engine_test::GroupBy& got, const engine_test::GroupBy& want) {
  if (got.rows.size() != want.rows.size())
    return std::to_string(got.rows.size()) + " groups, expected " + std::to_string(want.rows.size());
  for (std::size_t i = 0; i < got.rows.size(); ++i) {
    const auto &x = got.rows[i], &y = want.rows[i];
    if (x.key_bits != y.key_bits || x.count != y.count || x.isum != y.isum || x.imin != y.imin || x.imax != y.imax)
      return "group " + std::to_string(i) + " (key " + std::to_string(y.key_bits) + ") differs";
  }
  return {};
}

}  // namespace tandem::test
