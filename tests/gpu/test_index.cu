// GPU index kernels against CPU references: every method of crop, permute, broadcast add and
// stencil on odd shapes (one element too), the wide carry kernels over many alignments and row
// lengths, and packed tables generated on the device against the host generator.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "tandem/core/device.hpp"
#include "tandem/cuda/buffers.hpp"
#include "tandem/cuda/runtime.hpp"
#include "tandem/index.hpp"
#include "tandem/index/kernels.hpp"
#include "test_util.hpp"

using namespace tandem;
using namespace tandem::index;

namespace {
bool sanitizer() { return std::getenv("TANDEM_SANITIZER") != nullptr; }

std::vector<Dims3> shapes() {
  if (sanitizer()) return {{1, 1, 1}, {5, 7, 3}, {33, 2, 5}};
  return {{1, 1, 1}, {5, 70, 10}, {33, 2, 5}, {129, 67, 31}, {1, 1, 1000}, {300, 1, 1}};
}

template <class T>
std::vector<T> download(const gpu::DeviceBuffer<T>& d) {
  std::vector<T> h(d.size());
  if (d.size()) TANDEM_CUDA(cudaMemcpy(h.data(), d.data(), d.bytes(), cudaMemcpyDeviceToHost));
  return h;
}

struct Table {
  gpu::DeviceBuffer<std::uint8_t> buf;
  PackLayout layout;
  explicit Table(Dims3 d) : buf(std::size_t(d.count()) * pack_layout(d).word_bits / 8), layout(pack_layout(d)) {
    kernels::generate_table(buf.data(), d, layout, nullptr);
  }
};

constexpr Method kAll[] = {Method::div, Method::magic, Method::carry, Method::packed, Method::plain3d};
}  // namespace

TEST(GpuIndex, DeviceTablesMatchHostTables) {
  TANDEM_REQUIRE_GPU();
  for (Dims3 d : shapes()) {
    Table t(d);
    const PackedTable host = build_packed_table(d);
    std::vector<std::uint8_t> got(t.buf.size());
    TANDEM_CUDA(cudaMemcpy(got.data(), t.buf.data(), got.size(), cudaMemcpyDeviceToHost));
    EXPECT_EQ(got, host.storage) << to_string(d);
  }
}

TEST(GpuIndex, CropEveryMethodEveryElementSize) {
  TANDEM_REQUIRE_GPU();
  for (Dims3 d : shapes())
    for (int elem : {1, 2, 4}) {
      const Dims3 src{d.x + 4, d.y + 3, d.z + 2};
      const std::size_t sb = std::size_t(src.count()) * elem, ob = std::size_t(d.count()) * elem;
      gpu::DeviceBuffer<std::uint8_t> s(sb + 32), o(ob);
      kernels::fill_bytes(s.data(), sb, 5, nullptr);
      Table t(d);
      kernels::Walk w;
      w.dims = d;
      w.sy = src.x;
      w.sz = std::int64_t(src.x) * src.y;
      w.base = 1 + 2 * w.sy + 1 * w.sz;
      w.table = t.buf.data();
      w.layout = t.layout;
      w.grid = 3;  // few blocks: many grid-stride iterations
      std::vector<std::uint8_t> ref(ob);
      for (std::uint32_t z = 0; z < d.z; ++z)
        for (std::uint32_t y = 0; y < d.y; ++y)
          for (std::uint32_t x = 0; x < d.x; ++x)
            for (int b = 0; b < elem; ++b) {
              const std::uint64_t se = std::uint64_t(w.base) + x + y * w.sy + z * w.sz;
              ref[((std::size_t(z) * d.y + y) * d.x + x) * elem + b] =
                  std::uint8_t(kernels::test_bits(se * elem + b, 5));
            }
      for (Method m : kAll) {
        o.poison();
        kernels::crop(m, elem, s.data(), o.data(), w, nullptr);
        EXPECT_EQ(download(o), ref) << to_string(m) << " " << to_string(d) << " elem " << elem;
      }
    }
}

TEST(GpuIndex, WideCropAllAlignmentsAndRowLengths) {
  TANDEM_REQUIRE_GPU();
  const std::vector<std::uint32_t> rows =
      sanitizer() ? std::vector<std::uint32_t>{1, 15, 17, 40}
                  : std::vector<std::uint32_t>{1, 2, 3, 7, 15, 16, 17, 31, 32, 33, 40, 100, 1001};
  for (std::uint32_t R : rows)
    for (std::uint32_t ox : {0u, 1u, 5u, 15u, 16u, 17u})
      for (unsigned grid : {0u, 1u})
        for (int unroll : {1, 2, 4}) {
          const Dims3 d{R, 7, 3};
          const std::uint32_t SX = R + ox + 3, SY = 9;
          const std::size_t sb = std::size_t(SX) * SY * 4;
          gpu::DeviceBuffer<std::uint8_t> s(sb + 16), o(d.count() + 16);
          kernels::fill_bytes(s.data(), sb, 9, nullptr);
          kernels::Walk w;
          w.dims = d;
          w.sy = SX;
          w.sz = std::int64_t(SX) * SY;
          w.base = ox + 1 * w.sy + 1 * w.sz;
          w.grid = grid;
          w.unroll = unroll;
          o.poison();
          kernels::crop_wide(s.data(), o.data(), w, nullptr);
          const auto got = download(o);
          for (std::uint32_t z = 0; z < d.z; ++z)
            for (std::uint32_t y = 0; y < d.y; ++y)
              for (std::uint32_t x = 0; x < d.x; ++x) {
                const std::uint64_t se = std::uint64_t(w.base) + x + y * w.sy + z * w.sz;
                ASSERT_EQ(got[(std::size_t(z) * d.y + y) * d.x + x], std::uint8_t(kernels::test_bits(se, 9)))
                    << "R=" << R << " ox=" << ox << " grid=" << grid << " unroll=" << unroll << " at " << x << "," << y
                    << "," << z;
              }
          for (std::size_t i = d.count(); i < got.size(); ++i) ASSERT_EQ(got[i], 0xFF) << "wrote past the end, R=" << R;
        }
}

TEST(GpuIndex, BroadcastAddAndWideVariant) {
  TANDEM_REQUIRE_GPU();
  for (Dims3 d : shapes()) {
    const std::uint64_t n = d.count(), nb = std::uint64_t(d.x) * d.z;
    gpu::DeviceBuffer<float> a(n), b(nb), o(n);
    kernels::fill_floats(a.data(), n, 1, nullptr);
    kernels::fill_floats(b.data(), nb, 2, nullptr);
    Table t(d);
    kernels::Walk w;
    w.dims = d;
    w.sx = 1;
    w.sy = 0;
    w.sz = d.x;
    w.table = t.buf.data();
    w.layout = t.layout;
    w.grid = 2;
    std::vector<float> ref(n);
    for (std::uint32_t z = 0; z < d.z; ++z)
      for (std::uint32_t y = 0; y < d.y; ++y)
        for (std::uint32_t x = 0; x < d.x; ++x) {
          const std::size_t e = (std::size_t(z) * d.y + y) * d.x + x;
          ref[e] = kernels::test_float(e, 1) + kernels::test_float(x + std::uint64_t(z) * d.x, 2);
        }
    for (Method m : kAll) {
      o.poison();
      kernels::broadcast_add(m, a.data(), b.data(), o.data(), w, nullptr);
      EXPECT_EQ(download(o), ref) << to_string(m) << " " << to_string(d);
    }
    for (unsigned grid : {0u, 1u}) {
      w.grid = grid;
      o.poison();
      kernels::broadcast_add_wide(a.data(), b.data(), o.data(), w, nullptr);
      EXPECT_EQ(download(o), ref) << "wide " << to_string(d) << " grid " << grid;
    }
  }
}

TEST(GpuIndex, PermuteAndStencilEveryMethod) {
  TANDEM_REQUIRE_GPU();
  for (Dims3 d : shapes()) {
    const std::uint64_t n = d.count();
    const std::int64_t A = d.y, B = d.z;
    gpu::DeviceBuffer<float> in(n), o(n);
    kernels::fill_floats(in.data(), n, 3, nullptr);
    Table t(d);
    kernels::Walk w;
    w.dims = d;
    w.table = t.buf.data();
    w.layout = t.layout;
    w.grid = 5;
    std::vector<float> ref(n), sref(n);
    auto v = [&](std::int64_t e) { return kernels::test_float(std::uint64_t(e), 3); };
    for (std::uint32_t z = 0; z < d.z; ++z)
      for (std::uint32_t y = 0; y < d.y; ++y)
        for (std::uint32_t x = 0; x < d.x; ++x) {
          const std::int64_t e = (std::int64_t(z) * d.y + y) * d.x + x, sy = d.x, sz = std::int64_t(d.x) * d.y;
          ref[std::size_t(e)] = v(x * A * B + y + z * A);
          float want = v(e);
          if (!(x == 0 || y == 0 || z == 0 || x + 1 >= d.x || y + 1 >= d.y || z + 1 >= d.z))
            want = 0.5f * want + 0.0625f * ((v(e - 1) + v(e + 1)) + (v(e - sy) + v(e + sy)) + (v(e - sz) + v(e + sz)));
          sref[std::size_t(e)] = want;
        }
    for (Method m : kAll) {
      w.sx = A * B;
      w.sy = 1;
      w.sz = A;
      o.poison();
      kernels::permute(m, in.data(), o.data(), w, nullptr);
      EXPECT_EQ(download(o), ref) << "permute " << to_string(m) << " " << to_string(d);
      w.sx = 1;
      w.sy = d.x;
      w.sz = std::int64_t(d.x) * d.y;
      o.poison();
      kernels::stencil7(m, in.data(), o.data(), w, nullptr);
      EXPECT_EQ(download(o), sref) << "stencil " << to_string(m) << " " << to_string(d);
    }
  }
}

TEST(GpuIndex, DeviceHistoryCacheReusesTables) {
  TANDEM_REQUIRE_GPU();
  int generated = 0;
  HistoryCache cache({}, [&](Dims3 d, std::size_t& bytes) -> std::shared_ptr<const void> {
    ++generated;
    auto t = std::make_shared<Table>(d);
    bytes = t->buf.bytes();
    return t;
  });
  EXPECT_FALSE(cache.lookup(1, {32, 64, 1}).hit);
  EXPECT_FALSE(cache.lookup(2, {100, 2, 2}).hit);
  const auto r = cache.lookup(1, {32, 64, 1});
  EXPECT_TRUE(r.hit);
  EXPECT_EQ(generated, 2);
  std::vector<std::uint8_t> got(r.bytes);
  TANDEM_CUDA(cudaMemcpy(got.data(), HistoryCache::as<Table>(r).buf.data(), r.bytes, cudaMemcpyDeviceToHost));
  EXPECT_EQ(got, build_packed_table({32, 64, 1}).storage);
}
