// auto's choice between the CPU scan and the GPU path for a CSV group-by, against the times
// measured on the 16-core GPU box (docs/BENCHMARKS.md): the 10^7-row file (0.49 GB) stays on the
// CPU, where the GPU's start costs more than the scan; the 10^8-row file (5.19 GB) goes to the GPU;
// fewer CPU threads move the crossing to smaller files; no usable GPU, no GPU.
#include <gtest/gtest.h>

#include "scan/csv_device_choice.hpp"
#include "scan/gpu/csv_device.hpp"

using tandem::scan::estimate_csv_groupby;

TEST(CsvDeviceChoice, FollowsTheMeasuredCrossing) {
  const auto small = estimate_csv_groupby(485'600'000, 16, true);
  EXPECT_FALSE(small.gpu) << small.describe();
  EXPECT_NEAR(small.cpu_seconds, 0.177, 0.05);  // measured: 0.177 s
  EXPECT_NEAR(small.gpu_seconds, 0.296, 0.05);  // measured: 0.296 s
  const auto large = estimate_csv_groupby(5'190'000'000, 16, true);
  EXPECT_TRUE(large.gpu) << large.describe();
  EXPECT_NEAR(large.cpu_seconds, 1.205, 0.15);                  // measured: 1.205 s
  EXPECT_LT(large.gpu_seconds, 0.7);                            // measured: 0.487 s (q1) and 0.587 s (q3)
  EXPECT_TRUE(estimate_csv_groupby(485'600'000, 2, true).gpu);  // two threads: the scan is 8x slower
  EXPECT_FALSE(estimate_csv_groupby(5'190'000'000, 16, false).gpu);
  EXPECT_FALSE(estimate_csv_groupby(0, 1, true).gpu);  // an empty file: the GPU's start never pays
}

TEST(CsvDeviceChoice, TakesTheGpuOnlyWhereItIsTenPercentFaster) {
  for (std::size_t bytes = 1; bytes < (std::size_t{1} << 40); bytes *= 3) {
    for (int threads : {1, 2, 8, 64, 256}) {
      const auto e = estimate_csv_groupby(bytes, threads, true);
      EXPECT_EQ(e.gpu, e.gpu_seconds <= 0.9 * e.cpu_seconds) << bytes << " bytes, " << threads << " threads";
      EXPECT_NE(e.describe().find(e.gpu ? "the GPU" : "the CPU"), std::string::npos);
    }
  }
}

// A file grouped on the GPU in pieces keeps the first piece's types: a later piece that infers a
// narrower type is parsed again with the first one's, a wider one ends the GPU path.
TEST(CsvPieceTypes, NarrowerPiecesTakeTheFirstTypeWiderOnesDoNot) {
  using tandem::ColumnType;
  using tandem::scan::compare_piece_type;
  using tandem::scan::PieceType;
  for (const auto t : {ColumnType::i64, ColumnType::f64, ColumnType::str})
    EXPECT_EQ(compare_piece_type(t, t), PieceType::same);
  EXPECT_EQ(compare_piece_type(ColumnType::f64, ColumnType::i64), PieceType::narrower);  // 1.5 first, then 2
  EXPECT_EQ(compare_piece_type(ColumnType::str, ColumnType::i64), PieceType::narrower);  // a piece of missing values
  EXPECT_EQ(compare_piece_type(ColumnType::str, ColumnType::f64), PieceType::narrower);
  EXPECT_EQ(compare_piece_type(ColumnType::i64, ColumnType::f64), PieceType::wider);
  EXPECT_EQ(compare_piece_type(ColumnType::i64, ColumnType::str), PieceType::wider);  // 08123 after 8123
  EXPECT_EQ(compare_piece_type(ColumnType::f64, ColumnType::str), PieceType::wider);
}
