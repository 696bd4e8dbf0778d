// The six benchmark kernels on the GPU, launched through the schedule launcher, and the runner
// that owns their buffers. Every kernel is written so that a block's result does not depend on
// which blocks ran before it: outputs are identical under every schedule.
#include "tandem/schedule/kernels.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tandem/core/error.hpp"
#include "tandem/cuda/buffers.hpp"
#include "tandem/cuda/runtime.hpp"
#include "tandem/cuda/stream.hpp"
#include "tandem/schedule/launch.cuh"

namespace tandem::schedule {

// ---------------------------------------------------------------- kernels
namespace {

constexpr int kTX = 32, kTY = 8;  // every kernel: 32 x 8 threads

__constant__ float c_conv[121];

// Sum over the warp in a fixed butterfly order (every lane gets the same, deterministic value).
__device__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xFFFFFFFFu, v, o);
  return v;
}

__device__ float warp_inclusive_scan(float v, int lane) {
  for (int o = 1; o < 32; o <<= 1) {
    const float t = __shfl_up_sync(0xFFFFFFFFu, v, o);
    if (lane >= o) v += t;
  }
  return v;
}

// Block: 32 rows x 256 columns; warp w handles rows w, w+8, w+16, w+24.
__global__ void intimg_row_kernel(ScheduleView v, const float* __restrict__ in, float* __restrict__ out,
                                  std::uint32_t n) {
  const Block b = v.block();
  const int lane = threadIdx.x;
  const std::size_t x0 = std::size_t(b.x) * 256;
  for (int r = threadIdx.y; r < 32; r += kTY) {
    const std::size_t row = (std::size_t(b.y) * 32 + r) * n;
    float part = 0;
    for (std::size_t x = lane; x < x0; x += 32) part += in[row + x];  // the carry, re-read
    float carry = warp_sum(part);
    for (int c = 0; c < 256; c += 32) {
      const float s = warp_inclusive_scan(in[row + x0 + c + lane], lane);
      out[row + x0 + c + lane] = carry + s;
      carry += __shfl_sync(0xFFFFFFFFu, s, 31);
    }
  }
}

// Block: 32 columns x 256 rows; thread (lx, ly) owns column x0 + lx; ly splits rows 8 ways.
__global__ void intimg_col_kernel(ScheduleView v, const float* __restrict__ in, float* __restrict__ out,
                                  std::uint32_t n) {
  const Block b = v.block();
  __shared__ float part[kTY][32];
  __shared__ float seg[kTY][32];
  const int lx = threadIdx.x, ly = threadIdx.y;
  const std::size_t x = std::size_t(b.x) * 32 + lx;
  const std::size_t y0 = std::size_t(b.y) * 256;
  float p = 0;
  for (std::size_t y = ly; y < y0; y += kTY) p += in[y * n + x];  // the carry, re-read
  // Local sums of this thread's 32 consecutive rows of the tile.
  float s = 0;
  const std::size_t ys = y0 + std::size_t(ly) * 32;
  for (int i = 0; i < 32; ++i) s += in[(ys + i) * n + x];
  part[ly][lx] = p;
  seg[ly][lx] = s;
  __syncthreads();
  float carry = 0;
  for (int i = 0; i < kTY; ++i) carry += part[i][lx];
  for (int i = 0; i < ly; ++i) carry += seg[i][lx];
  for (int i = 0; i < 32; ++i) {
    carry += in[(ys + i) * n + x];
    out[(ys + i) * n + x] = carry;
  }
}

// Block: 32 x 32 outputs, each thread 4 rows; direct (cache-reliant) reads of the input.
__global__ void conv11_kernel(ScheduleView v, const float* __restrict__ in, float* __restrict__ out, std::uint32_t n) {
  const Block b = v.block();
  const int x = int(b.x) * 32 + threadIdx.x;
  const int last = int(n) - 1;
  for (int r = threadIdx.y; r < 32; r += kTY) {
    const int y = int(b.y) * 32 + r;
    float acc = 0;
    for (int i = 0; i < 11; ++i) {
      const int yy = min(max(y + i - 5, 0), last);
      const float* rowp = in + std::size_t(yy) * n;
      for (int j = 0; j < 11; ++j) {
        const int xx = min(max(x + j - 5, 0), last);
        acc = __fmaf_rn(c_conv[i * 11 + j], rowp[xx], acc);
      }
    }
    out[std::size_t(y) * n + x] = acc;
  }
}

// Block: 32 x 32 outputs of C = A B; 32 x 32 tiles of A and B through shared memory.
__global__ void matmul_kernel(ScheduleView v, const float* __restrict__ A, const float* __restrict__ B,
                              float* __restrict__ C, std::uint32_t n) {
  const Block b = v.block();
  __shared__ float As[32][33];
  __shared__ float Bs[32][33];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const std::size_t row0 = std::size_t(b.y) * 32, col = std::size_t(b.x) * 32 + tx;
  float acc[4] = {0, 0, 0, 0};
  for (std::size_t k0 = 0; k0 < n; k0 += 32) {
    for (int r = ty; r < 32; r += kTY) {
      As[r][tx] = A[(row0 + r) * n + k0 + tx];
      Bs[r][tx] = B[(k0 + r) * n + col];
    }
    __syncthreads();
#pragma unroll 8
    for (int k = 0; k < 32; ++k) {
      const float bk = Bs[k][tx];
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[i] = __fmaf_rn(As[ty + i * kTY][k], bk, acc[i]);
    }
    __syncthreads();
  }
  for (int i = 0; i < 4; ++i) C[(row0 + ty + i * kTY) * n + col] = acc[i];
}

// Block: 32 x 32 tile; lanes along a row (coalesced).
__global__ void copy_row_kernel(ScheduleView v, const float* __restrict__ in, float* __restrict__ out,
                                std::uint32_t n) {
  const Block b = v.block();
  const std::size_t x = std::size_t(b.x) * 32 + threadIdx.x;
  for (int r = threadIdx.y; r < 32; r += kTY) {
    const std::size_t i = (std::size_t(b.y) * 32 + r) * n + x;
    out[i] = in[i];
  }
}

// Block: 32 x 32 tile; lanes down a column (each warp access touches 32 rows).
__global__ void copy_col_kernel(ScheduleView v, const float* __restrict__ in, float* __restrict__ out,
                                std::uint32_t n) {
  const Block b = v.block();
  const std::size_t y = std::size_t(b.y) * 32 + threadIdx.x;
  for (int c = threadIdx.y; c < 32; c += kTY) {
    const std::size_t i = y * n + std::size_t(b.x) * 32 + c;
    out[i] = in[i];
  }
}

// Counts elements whose bits differ (outputs must be identical under every schedule).
__global__ void count_differences_kernel(const unsigned* __restrict__ a, const unsigned* __restrict__ b, std::size_t n,
                                         unsigned long long* count) {
  unsigned long long local = 0;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    local += a[i] != b[i];
  if (local) atomicAdd(count, local);
}

}  // namespace

// ---------------------------------------------------------------- runner

struct KernelRunner::Impl {
  const KernelSpec* spec;
  std::uint32_t n;
  std::vector<float> host_a, host_b;
  gpu::DeviceBuffer<float> a, b, out, kept;
  gpu::DeviceBuffer<unsigned long long> diff_count;
  gpu::Stream stream;
  Launcher launcher;
};

KernelRunner::KernelRunner(const KernelSpec& k, std::uint32_t n, std::uint32_t seed) {
  check_size(n);
  gpu::require();
  auto im = std::make_unique<Impl>();
  im->spec = &k;
  im->n = n;
  const std::size_t e = std::size_t(n) * n;
  im->host_a = make_input(n, seed);
  im->a = gpu::DeviceBuffer<float>(e);
  TANDEM_CUDA(cudaMemcpy(im->a.data(), im->host_a.data(), e * sizeof(float), cudaMemcpyHostToDevice));
  if (k.inputs > 1) {
    im->host_b = make_input(n, seed + 1000);
    im->b = gpu::DeviceBuffer<float>(e);
    TANDEM_CUDA(cudaMemcpy(im->b.data(), im->host_b.data(), e * sizeof(float), cudaMemcpyHostToDevice));
  }
  im->out = gpu::DeviceBuffer<float>(e);
  if (k.name == "conv11") {
    const auto w = conv_weights();
    TANDEM_CUDA(cudaMemcpyToSymbol(c_conv, w.data(), sizeof(float) * 121));
  }
  impl_ = std::move(im);
  poison_output();
}

KernelRunner::~KernelRunner() = default;

std::string KernelRunner::name() const { return impl_->spec->name; }
Grid KernelRunner::grid() const { return impl_->spec->grid(impl_->n); }
cudaStream_t KernelRunner::stream() const { return impl_->stream.get(); }
void KernelRunner::set_ticket(bool on) { impl_->launcher.set_ticket(on); }
void KernelRunner::set_hilbert_table(std::optional<bool> on) {
  impl_->launcher.set_table_threshold(!on || *on ? 1 : 0);
}
const std::vector<float>& KernelRunner::input(int i) const { return i == 0 ? impl_->host_a : impl_->host_b; }

void KernelRunner::launch_rect(const Schedule& s, BlockRect r) {
  const Grid g = grid();
  if (r.w == 0 || r.h == 0) return;
  if (r.x0 >= g.w || r.w > g.w - r.x0 || r.y0 >= g.h || r.h > g.h - r.y0)
    throw UsageError("blocks [" + std::to_string(r.x0) + ", " + std::to_string(std::uint64_t(r.x0) + r.w) + ") x [" +
                     std::to_string(r.y0) + ", " + std::to_string(std::uint64_t(r.y0) + r.h) + ") outside the " +
                     std::to_string(g.w) + "x" + std::to_string(g.h) + " grid");
  auto& im = *impl_;
  const ScheduleView v = im.launcher.view(s, r.grid(), r.x0, r.y0, im.stream.get());
  const dim3 threads(kTX, kTY);
  const unsigned blocks = v.blocks();
  const std::string& k = im.spec->name;
  cudaStream_t st = im.stream.get();
  if (k == "intimg-row") {
    intimg_row_kernel<<<blocks, threads, 0, st>>>(v, im.a.data(), im.out.data(), im.n);
    TANDEM_CUDA_LAUNCH("intimg_row_kernel");
  } else if (k == "intimg-col") {
    intimg_col_kernel<<<blocks, threads, 0, st>>>(v, im.a.data(), im.out.data(), im.n);
    TANDEM_CUDA_LAUNCH("intimg_col_kernel");
  } else if (k == "conv11") {
    conv11_kernel<<<blocks, threads, 0, st>>>(v, im.a.data(), im.out.data(), im.n);
    TANDEM_CUDA_LAUNCH("conv11_kernel");
  } else if (k == "matmul") {
    matmul_kernel<<<blocks, threads, 0, st>>>(v, im.a.data(), im.b.data(), im.out.data(), im.n);
    TANDEM_CUDA_LAUNCH("matmul_kernel");
  } else if (k == "copy-row") {
    copy_row_kernel<<<blocks, threads, 0, st>>>(v, im.a.data(), im.out.data(), im.n);
    TANDEM_CUDA_LAUNCH("copy_row_kernel");
  } else if (k == "copy-col") {
    copy_col_kernel<<<blocks, threads, 0, st>>>(v, im.a.data(), im.out.data(), im.n);
    TANDEM_CUDA_LAUNCH("copy_col_kernel");
  } else {
    throw UsageError("kernel " + k + " has no GPU implementation");
  }
}

double KernelRunner::time_full(const Schedule& s) {
  gpu::Event e0, e1;
  e0.record(impl_->stream.get());
  launch(s, 0, grid().h);
  e1.record(impl_->stream.get());
  e1.sync();
  return e1.seconds_since(e0);
}

void KernelRunner::poison_output() {
  impl_->out.poison(impl_->stream.get());
  impl_->stream.sync();
}

void KernelRunner::keep_output() {
  auto& im = *impl_;
  if (!im.kept.size()) im.kept = gpu::DeviceBuffer<float>(im.out.size());
  TANDEM_CUDA(
      cudaMemcpyAsync(im.kept.data(), im.out.data(), im.out.bytes(), cudaMemcpyDeviceToDevice, im.stream.get()));
  im.stream.sync();
}

std::uint64_t KernelRunner::output_differences() const {
  auto& im = *impl_;
  if (!im.kept.size()) return im.out.size();
  if (!im.diff_count.size()) im.diff_count = gpu::DeviceBuffer<unsigned long long>(1);
  cudaStream_t st = im.stream.get();
  TANDEM_CUDA(cudaMemsetAsync(im.diff_count.data(), 0, sizeof(unsigned long long), st));
  const std::size_t n = im.out.size();
  const unsigned blocks = unsigned(std::min<std::size_t>((n + 255) / 256, 4096));
  count_differences_kernel<<<blocks, 256, 0, st>>>(reinterpret_cast<const unsigned*>(im.out.data()),
                                                   reinterpret_cast<const unsigned*>(im.kept.data()), n,
                                                   im.diff_count.data());
  TANDEM_CUDA_LAUNCH("count_differences_kernel");
  unsigned long long h = 0;
  TANDEM_CUDA(cudaMemcpyAsync(&h, im.diff_count.data(), sizeof h, cudaMemcpyDeviceToHost, st));
  im.stream.sync();
  return h;
}

std::vector<float> KernelRunner::output() const {
  impl_->stream.sync();
  std::vector<float> h(impl_->out.size());
  TANDEM_CUDA(cudaMemcpy(h.data(), impl_->out.data(), impl_->out.bytes(), cudaMemcpyDeviceToHost));
  return h;
}

}  // namespace tandem::schedule
