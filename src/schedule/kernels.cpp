// The six benchmark kernels' CPU side: specifications with their footprints, sizes, references
// (and the runner's stand-in in CPU-only builds; the runner itself is in kernel_runner.cu).
#include "tandem/schedule/kernels.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "tandem/core/error.hpp"

namespace tandem::schedule {

namespace {

std::uint32_t clampi(std::int64_t v, std::uint32_t lo, std::uint32_t hi) {
  return std::uint32_t(std::min<std::int64_t>(std::max<std::int64_t>(v, lo), hi));
}

std::vector<KernelSpec> make_specs() {
  std::vector<KernelSpec> s;
  s.push_back({"intimg-row", "row-wise integral image (prefix sums along rows, carry re-read)", 256, 32, 1,
               [](std::uint32_t, Block b, std::vector<Rect>& o) {
                 const std::uint32_t x0 = b.x * 256, y0 = b.y * 32;
                 o.push_back({0, 0, y0, x0 + 256, y0 + 32});
                 o.push_back({2, x0, y0, x0 + 256, y0 + 32});
               }});
  s.push_back({"intimg-col", "column-wise integral image (prefix sums down columns, carry re-read)", 32, 256, 1,
               [](std::uint32_t, Block b, std::vector<Rect>& o) {
                 const std::uint32_t x0 = b.x * 32, y0 = b.y * 256;
                 o.push_back({0, x0, 0, x0 + 32, y0 + 256});
                 o.push_back({2, x0, y0, x0 + 32, y0 + 256});
               }});
  s.push_back(
      {"conv11", "11x11 convolution, clamped borders", 32, 32, 1, [](std::uint32_t n, Block b, std::vector<Rect>& o) {
         const std::int64_t x0 = b.x * 32, y0 = b.y * 32;
         o.push_back({0, clampi(x0 - 5, 0, n), clampi(y0 - 5, 0, n), clampi(x0 + 37, 0, n), clampi(y0 + 37, 0, n)});
         o.push_back({2, std::uint32_t(x0), std::uint32_t(y0), std::uint32_t(x0 + 32), std::uint32_t(y0 + 32)});
       }});
  s.push_back({"matmul", "matrix multiplication C = A B, 32x32 shared-memory tiles", 32, 32, 2,
               [](std::uint32_t n, Block b, std::vector<Rect>& o) {
                 const std::uint32_t x0 = b.x * 32, y0 = b.y * 32;
                 o.push_back({0, 0, y0, n, y0 + 32});
                 o.push_back({1, x0, 0, x0 + 32, n});
                 o.push_back({2, x0, y0, x0 + 32, y0 + 32});
               }});
  auto tile = [](std::uint32_t, Block b, std::vector<Rect>& o) {
    const std::uint32_t x0 = b.x * 32, y0 = b.y * 32;
    o.push_back({0, x0, y0, x0 + 32, y0 + 32});
    o.push_back({2, x0, y0, x0 + 32, y0 + 32});
  };
  s.push_back({"copy-row", "matrix copy, warps along rows (coalesced)", 32, 32, 1, tile});
  s.push_back({"copy-col", "matrix copy, warps down columns (uncoalesced)", 32, 32, 1, tile});
  return s;
}

}  // namespace

double flops(const KernelSpec& k, std::uint32_t n) {
  const double e = double(n) * n;
  if (k.name == "matmul") return 2.0 * e * n;
  if (k.name == "conv11") return 2.0 * 121 * e;
  if (k.name.rfind("intimg", 0) == 0) return e;
  return 0;
}

const std::vector<KernelSpec>& kernel_specs() {
  static const std::vector<KernelSpec> s = make_specs();
  return s;
}

const KernelSpec& kernel_spec(const std::string& name) {
  std::string known;
  for (const auto& k : kernel_specs()) {
    if (k.name == name) return k;
    known += (known.empty() ? "" : ", ") + k.name;
  }
  throw UsageError(fmt::format("unknown kernel '{}' (expected one of: {})", name, known));
}

void check_size(std::uint32_t n) {
  if (n == 0 || n % 256 != 0 || n > 65536)
    throw UsageError(fmt::format("size {} must be a positive multiple of 256, at most 65536", n));
}

std::vector<float> make_input(std::uint32_t n, std::uint32_t seed) {
  std::vector<float> v(std::size_t(n) * n);
  std::uint64_t x = 0x9E3779B97F4A7C15ull * (seed + 1);
  for (auto& f : v) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    f = float(x >> 40) / float(1 << 24);  // [0, 1), 24 bits: sums of many stay exact longer
  }
  return v;
}

std::vector<float> conv_weights() {
  std::vector<float> w(121);
  double sum = 0;
  for (int i = 0; i < 121; ++i) {
    w[i] = float(1 + (i * 7) % 13);
    sum += w[i];
  }
  for (auto& f : w) f = float(f / sum);
  return w;
}

std::vector<float> reference(const KernelSpec& k, std::uint32_t n, const std::vector<float>& a,
                             const std::vector<float>& b) {
  check_size(n);
  const std::size_t N = n;
  std::vector<float> out(N * N);
  if (k.name == "intimg-row") {
    for (std::size_t y = 0; y < N; ++y) {
      double s = 0;
      for (std::size_t x = 0; x < N; ++x) out[y * N + x] = float(s += a[y * N + x]);
    }
  } else if (k.name == "intimg-col") {
    std::vector<double> s(N, 0.0);
    for (std::size_t y = 0; y < N; ++y)
      for (std::size_t x = 0; x < N; ++x) out[y * N + x] = float(s[x] += a[y * N + x]);
  } else if (k.name == "conv11") {
    const auto w = conv_weights();
    for (std::size_t y = 0; y < N; ++y)
      for (std::size_t x = 0; x < N; ++x) {
        float acc = 0;
        for (int i = 0; i < 11; ++i) {
          const std::size_t yy = clampi(std::int64_t(y) + i - 5, 0, n - 1);
          for (int j = 0; j < 11; ++j) {
            const std::size_t xx = clampi(std::int64_t(x) + j - 5, 0, n - 1);
            acc = std::fma(w[i * 11 + j], a[yy * N + xx], acc);
          }
        }
        out[y * N + x] = acc;
      }
  } else if (k.name == "matmul") {
    for (std::size_t y = 0; y < N; ++y)
      for (std::size_t x = 0; x < N; ++x) {
        float acc = 0;
        for (std::size_t i = 0; i < N; ++i) acc = std::fma(a[y * N + i], b[i * N + x], acc);
        out[y * N + x] = acc;
      }
  } else {
    out = a;
  }
  return out;
}

double max_rel_error(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return std::numeric_limits<double>::infinity();
  double m = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double d = std::fabs(double(got[i]) - double(want[i])) / std::max(1.0, std::fabs(double(want[i])));
    if (!(d <= m)) m = std::isnan(d) ? std::numeric_limits<double>::infinity() : d;
  }
  return m;
}

#if !TANDEM_HAS_CUDA
// CPU-only builds: the runner exists so callers compile, and says a GPU is needed.
struct KernelRunner::Impl {};

KernelRunner::KernelRunner(const KernelSpec&, std::uint32_t n, std::uint32_t) {
  check_size(n);
  throw NoDeviceError("running schedule kernels needs a GPU (this build has no CUDA)");
}
KernelRunner::~KernelRunner() = default;
std::string KernelRunner::name() const { return {}; }
Grid KernelRunner::grid() const { return {}; }
void KernelRunner::launch_rect(const Schedule&, BlockRect) {}
cudaStream_t KernelRunner::stream() const { return nullptr; }
void KernelRunner::set_ticket(bool) {}
void KernelRunner::set_hilbert_table(std::optional<bool>) {}
double KernelRunner::time_full(const Schedule&) { return 0; }
void KernelRunner::poison_output() {}
std::vector<float> KernelRunner::output() const { return {}; }
void KernelRunner::keep_output() {}
std::uint64_t KernelRunner::output_differences() const { return 0; }
const std::vector<float>& KernelRunner::input(int) const {
  static const std::vector<float> none;
  return none;
}
#endif

}  // namespace tandem::schedule
