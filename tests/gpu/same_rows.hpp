// Two group-bys compared row by row (GPU against the CPU engine), every aggregate as stored.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "tandem/mapreduce.hpp"

namespace tandem::test {

// Equal as stored: NaN equals NaN, -0.0 differs from +0.0.
inline bool same(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

inline void expect_same_rows(const mapreduce::GroupBy& gpu, const mapreduce::GroupBy& cpu, const std::string& what) {
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

}  // namespace tandem::test
