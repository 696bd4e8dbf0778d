// Two group-bys compared row by row (GPU against the CPU engine), every aggregate as stored, and
// the values they aggregate.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "gpu/engine_groupby.hpp"
#include "tandem/core/hash.hpp"
#include "tandem/mapreduce.hpp"

namespace tandem::test {

// Equal as stored: NaN equals NaN, -0.0 differs from +0.0.
inline bool same(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

inline void expect_same_rows(const engine_test::GroupBy& gpu, const engine_test::GroupBy& cpu,
                             const std::string& what) {
  ASSERT_EQ(gpu.rows.size(), cpu.rows.size()) << what;
  for (std::size_t i = 0; i < gpu.rows.size(); ++i) {
    const auto& a = gpu.rows[i];
    const auto& b = cpu.rows[i];
    ASSERT_EQ(a.key_bits, b.key_bits) << what << " row " << i;
    EXPECT_EQ(a.count, b.count) << what << " key " << a.key_bits;
    EXPECT_TRUE(same(a.dsum, b.dsum)) << what << " key " << a.key_bits << " sum " << a.dsum << " vs " << b.dsum;
    EXPECT_TRUE(same(a.dmin, b.dmin)) << what << " key " << a.key_bits << " min " << a.dmin << " vs " << b.dmin;
    EXPECT_TRUE(same(a.dmax, b.dmax)) << what << " key " << a.key_bits << " max " << a.dmax << " vs " << b.dmax;
    EXPECT_EQ(a.isum, b.isum) << what << " key " << a.key_bits;
    EXPECT_EQ(a.imin, b.imin) << what << " key " << a.key_bits;
    EXPECT_EQ(a.imax, b.imax) << what << " key " << a.key_bits;
  }
}

// n values of each type: integers (exact sums in any order), negative ones too; -0.0 and NaN in
// f64, -0.0 in f32 (from 8 values on).
struct MixedValues {
  std::vector<double> f64;
  std::vector<float> f32;
  std::vector<std::int64_t> i64;
  std::vector<std::int32_t> i32;
};
inline MixedValues mixed_values(std::size_t n) {
  MixedValues v{std::vector<double>(n), std::vector<float>(n), std::vector<std::int64_t>(n),
                std::vector<std::int32_t>(n)};
  for (std::size_t i = 0; i < n; ++i) {
    v.f64[i] = double(std::int64_t(mix64(i) % 2001) - 1000);
    v.f32[i] = float(std::int64_t(mix64(i + 3) % 201) - 100);
    v.i64[i] = std::int64_t(mix64(i + 7) % 2000001) - 1000000;
    v.i32[i] = std::int32_t(mix64(i + 9) % 20001) - 10000;
  }
  if (n > 7) {
    v.f64[5] = -0.0;
    v.f64[6] = std::nan("");
    v.f32[7] = -0.0f;
  }
  return v;
}

}  // namespace tandem::test
