// Core library on the CPU: vocabulary types, array files, tuning and its cache, reports, devices.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tandem/core/detail/huge_pages.hpp"
#include "tandem/core/device.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/io.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/core/report.hpp"
#include "tandem/core/tune.hpp"
#include "tandem/core/types.hpp"
#include "tandem/core/uninit_allocator.hpp"
#include "test_util.hpp"

using namespace tandem;

TEST(Types, ParseAndName) {
  EXPECT_EQ(parse_dtype("u32"), DType::u32);
  EXPECT_EQ(parse_dtype("f64"), DType::f64);
  EXPECT_EQ(dtype_size(DType::i64), 8u);
  EXPECT_TRUE(dtype_is_float(DType::f32));
  EXPECT_FALSE(dtype_is_signed(DType::u16));
  EXPECT_THROW(parse_dtype("u33"), UsageError);
  EXPECT_EQ(parse_device("hybrid"), Device::hybrid);
  EXPECT_THROW(parse_device("tpu"), UsageError);
  EXPECT_EQ(to_string(Device::auto_), "auto");
}

TEST(Errors, ExitCodes) {
  EXPECT_EQ(exit_code_for(UsageError("x")), 2);
  EXPECT_EQ(exit_code_for(InputError("x")), 2);
  EXPECT_EQ(exit_code_for(CudaError("x")), 1);
  EXPECT_EQ(exit_code_for(std::runtime_error("x")), 1);
}

TEST(Io, RawRoundTripAndErrors) {
  TempDir dir;
  const std::string p = dir.file("a.u32");
  std::vector<std::uint32_t> v{5, 1, 4000000000u, 0};
  io::write_vector<std::uint32_t>(p, v);
  EXPECT_EQ(io::read_vector<std::uint32_t>(p), v);
  EXPECT_EQ(io::read_array(p, DType::u64).count, 2u);  // raw files carry no type: 16 bytes are 2 u64
  EXPECT_EQ(io::read_array(p, DType::u8).count, 16u);
}

TEST(Io, RawSizeNotMultiple) {
  TempDir dir;
  const std::string p = dir.file("odd.bin");
  std::ofstream(p) << "12345";
  try {
    io::read_array(p, DType::u32);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("not a multiple"), std::string::npos) << e.what();
  }
}

TEST(Io, NpyRoundTripTypeMismatchAndTruncation) {
  TempDir dir;
  const std::string p = dir.file("a.npy");
  std::vector<double> v{1.5, -0.0, 3};
  io::write_vector<double>(p, v);
  EXPECT_EQ(io::read_vector<double>(p), v);
  try {
    io::read_array(p, DType::f32);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("type mismatch"), std::string::npos) << e.what();
  }
  std::filesystem::resize_file(p, std::filesystem::file_size(p) - 3);
  EXPECT_THROW(io::read_array(p, DType::f64), InputError);
  std::ofstream(dir.file("bad.npy")) << "not numpy at all";
  EXPECT_THROW(io::read_array(dir.file("bad.npy"), DType::f64), InputError);
}

TEST(Io, EmptyArrays) {
  TempDir dir;
  io::write_vector<std::int64_t>(dir.file("e.npy"), {});
  EXPECT_TRUE(io::read_vector<std::int64_t>(dir.file("e.npy")).empty());
  io::write_vector<std::int64_t>(dir.file("e.raw"), {});
  EXPECT_TRUE(io::read_vector<std::int64_t>(dir.file("e.raw")).empty());
}

TEST(Io, MissingFileNamesIt) {
  try {
    io::read_array("/nonexistent/x.u32", DType::u32);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/x.u32"), std::string::npos);
  }
}

TEST(Io, AtomicOutputLeavesNothingOnFailure) {
  TempDir dir;
  const std::string p = dir.file("out.txt");
  {
    io::AtomicOutput out(p);
    out.stream() << "partial";
    // destroyed without commit
  }
  EXPECT_FALSE(std::filesystem::exists(p));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path), {}), 0);
  {
    io::AtomicOutput out(p);
    out.stream() << "whole";
    out.commit();
  }
  std::ifstream in(p);
  std::string s;
  in >> s;
  EXPECT_EQ(s, "whole");
  EXPECT_THROW(io::AtomicOutput("/nonexistent-dir/x"), InputError);
}

TEST(HugePages, AllocatedAlignedAndUsable) {
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{4095}, (std::size_t{2} << 20) - 1,
                        (std::size_t{2} << 20) + 5, std::size_t{5} << 20}) {
    void* p = detail::allocate_huge_pages(n);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % detail::kHugePage, 0u) << n;
    std::memset(p, 0x5a, detail::huge_page_bytes(n));
    detail::free_huge_pages(p);
    // The uninitialising allocator: small buffers from the heap, large ones on huge pages.
    std::vector<char, UninitAllocator<char>> v;
    v.resize(n);
    std::fill(v.begin(), v.end(), 'x');
    v.resize(n + (std::size_t{8} << 20), 'y');  // grows past the huge-page size: the bytes move
    EXPECT_EQ(std::count(v.begin(), v.begin() + std::ptrdiff_t(n), 'x'), static_cast<std::ptrdiff_t>(n)) << n;
    EXPECT_EQ(v.back(), 'y');
  }
}

TEST(Tune, GeometricProgression) {
  EXPECT_EQ(geometric(1, 16), (std::vector<std::int64_t>{1, 2, 4, 8, 16}));
  EXPECT_EQ(geometric(32, 100), (std::vector<std::int64_t>{32, 64, 100}));
  EXPECT_EQ(geometric(3, 3), (std::vector<std::int64_t>{3}));
  EXPECT_EQ(geometric(1, 10, 3), (std::vector<std::int64_t>{1, 3, 9, 10}));
  EXPECT_THROW(geometric(0, 4), UsageError);
  EXPECT_THROW(geometric(4, 2), UsageError);
}

TEST(Tune, PicksFastestAndReportsFailures) {
  std::vector<Candidate> c{{"slow", {{"t", 3}}}, {"fast", {{"t", 1}}}, {"broken", {{"t", 0}}}, {"mid", {{"t", 2}}}};
  Tuner t;
  t.repetitions(3).warmup(0);
  int calls = 0;
  auto r = t.run(c, [&](const Candidate& k) {
    ++calls;
    const int v = k.params["t"];
    if (v == 0) throw std::runtime_error("does not fit");
    return double(v);
  });
  EXPECT_EQ(r.winner().candidate.label, "fast");
  EXPECT_TRUE(r.results[2].failed);
  EXPECT_EQ(r.results[2].error, "does not fit");
  EXPECT_EQ(r.results[0].seconds.median, 3.0);
  EXPECT_NE(r.report().find("* fast"), std::string::npos);
  EXPECT_EQ(r.to_json()["best"], "fast");
  EXPECT_THROW(t.run({{"x", {}}}, [](const Candidate&) -> double { throw std::runtime_error("no"); }), Error);
  EXPECT_THROW(t.run({}, [](const Candidate&) { return 1.0; }), UsageError);
}

TEST(TuningCache, PersistsAcrossInstances) {
  TempDir dir;
  const std::string p = dir.file("c/tuning.json");
  {
    TuningCache c(p);
    EXPECT_FALSE(c.get("sort", "gpu0", "2^20").has_value());
    c.put("sort", "gpu0", "2^20", {{"block", 256}});
  }
  TuningCache c2(p);
  auto v = c2.get("sort", "gpu0", "2^20");
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ((*v)["block"], 256);
  EXPECT_TRUE(c2.warnings().empty());
}

TEST(TuningCache, CorruptOrStaleFileIsRebuiltNotFatal) {
  TempDir dir;
  const std::string p = dir.file("tuning.json");
  std::ofstream(p) << "{ this is not json";
  TuningCache c(p);
  EXPECT_FALSE(c.get("a", "b", "c").has_value());
  ASSERT_EQ(c.warnings().size(), 1u);
  EXPECT_NE(c.warnings()[0].find("corrupt"), std::string::npos);
  c.put("a", "b", "c", 7);
  TuningCache again(p);
  EXPECT_EQ(again.get("a", "b", "c").value(), 7);

  std::ofstream(p, std::ios::trunc) << R"({"version": 0, "entries": {"a|b|c": 1}})";
  TuningCache stale(p);
  EXPECT_FALSE(stale.get("a", "b", "c").has_value());
  EXPECT_NE(stale.warnings().at(0).find("version"), std::string::npos);
}

TEST(TuningCache, ConcurrentWritersNeverCorrupt) {
  TempDir dir;
  const std::string p = dir.file("tuning.json");
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&, t] {
      TuningCache c(p);
      for (int i = 0; i < 25; ++i) c.put("op", "dev" + std::to_string(t), std::to_string(i), i);
    });
  for (auto& t : ts) t.join();
  TuningCache c(p);
  EXPECT_TRUE(c.warnings().empty());
  for (int t = 0; t < 4; ++t) EXPECT_EQ(c.get("op", "dev" + std::to_string(t), "24").value(), 24);
}

TEST(TuningCache, SizeClass) {
  EXPECT_EQ(size_class(0), "2^0");
  EXPECT_EQ(size_class(1), "2^0");
  EXPECT_EQ(size_class(1024), "2^10");
  EXPECT_EQ(size_class(1025), "2^11");
}

TEST(Report, ExplainAndJson) {
  Report r;
  r.operation = "sort";
  r.note("GPU-only: k below break-even");
  r.add("H2D copy", "gpu0", 0.002, "1 GiB");
  r.add("GPU sort", "gpu0", 0.005);
  EXPECT_DOUBLE_EQ(r.total_seconds(), 0.007);
  EXPECT_NE(r.explain().find("H2D copy"), std::string::npos);
  EXPECT_EQ(r.to_json()["stages"].size(), 2u);
}

TEST(Device, CpuTopologyIsSane) {
  const auto c = cpu_info();
  EXPECT_GE(c.physical_cores, 1);
  EXPECT_GE(c.hardware_threads, c.physical_cores);
  EXPECT_GE(c.packages, 1);
  EXPECT_GE(c.numa_nodes, 1);
  EXPECT_FALSE(c.model.empty());
  const auto s = system_info();
  EXPECT_EQ(s.cuda_built, TANDEM_HAS_CUDA != 0);
  if (s.gpus.empty()) {
    EXPECT_FALSE(s.cuda_status.empty());
  }
  EXPECT_NE(describe(s).find("CPU"), std::string::npos);
}

TEST(Parallel, CopyMatchesForOddSizes) {
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{(1 << 20) + 7}, std::size_t{3 << 20}}) {
    std::vector<char> a(n), b(n, 0);
    for (std::size_t i = 0; i < n; ++i) a[i] = char(i * 31);
    parallel_copy(b.data(), a.data(), n, 3);
    EXPECT_EQ(a, b) << n;
  }
}

#include "tandem/core/calibrate.hpp"

TEST(Calibrate, MeasuresHostAndStoresForCostModels) {
  CalibrateOptions o;
  o.bytes = 2 << 20;
  o.repetitions = 1;
  o.tune_staging = false;
  const Bandwidths b = calibrate(o);
  EXPECT_GT(b.host_memcpy_1t, 0);
  EXPECT_GT(b.host_memcpy_mt, 0);
  if (gpu_count() == 0) {
    EXPECT_EQ(b.pinned_h2d, 0);
    EXPECT_TRUE(b.gpu.empty());
  }
  auto cached = cached_bandwidths();
  ASSERT_TRUE(cached.has_value());
  EXPECT_DOUBLE_EQ(cached->host_memcpy_mt, b.host_memcpy_mt);
  EXPECT_NE(describe(b).find("host memcpy"), std::string::npos);
}
