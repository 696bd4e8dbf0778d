// The six benchmark kernels of the block-schedule experiments (f32, n x n, row-major): their
// specifications (footprints for the static selector), CPU references, and a runner that owns
// their device buffers and launches them under any schedule (the controller's BandLauncher).
//
//   intimg-row  out[y][x] = sum_{x' <= x} in[y][x']   block: 32 rows x 256 columns; the carry from
//               the left is re-read from the input (naive), so blocks of one row share data
//   intimg-col  out[y][x] = sum_{y' <= y} in[y'][x]   block: 32 columns x 256 rows, carry re-read
//   conv11      out = 11x11 convolution of in (clamped borders)       block: 32 x 32 outputs
//   matmul      C = A * B, simple shared-memory tiled kernel           block: 32 x 32 outputs
//   copy-row    out = in, a warp copies along a row (coalesced)        block: 32 x 32
//   copy-col    out = in, a warp copies down a column (uncoalesced)    block: 32 x 32
//
// Sizes must be multiples of 256. KernelRunner needs a CUDA build; elsewhere its constructor
// throws NoDeviceError.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tandem/schedule.hpp"
#include "tandem/schedule/controller.hpp"

namespace tandem::schedule {

const std::vector<KernelSpec>& kernel_specs();
// UsageError naming the known kernels when `name` is unknown.
const KernelSpec& kernel_spec(const std::string& name);
// UsageError unless n is a positive multiple of 256 and at most 65536.
void check_size(std::uint32_t n);

// Arithmetic of one run (0 for the copies).
double flops(const KernelSpec& k, std::uint32_t n);

std::vector<float> make_input(std::uint32_t n, std::uint32_t seed);
// The 11x11 filter conv11 uses (normalised, asymmetric so a transposed result would differ).
std::vector<float> conv_weights();
// Reference results computed on the CPU with the same summation order as the GPU where the
// kernel allows it (conv11, matmul, copies: bit-exact; integral images: compare with tolerance).
std::vector<float> reference(const KernelSpec& k, std::uint32_t n, const std::vector<float>& a,
                             const std::vector<float>& b);
// Largest |got - want| / max(1, |want|); infinity for a size mismatch or NaN.
double max_rel_error(const std::vector<float>& got, const std::vector<float>& want);

// Device buffers, inputs and launches for one benchmark kernel at one size.
class KernelRunner : public BandLauncher {
 public:
  KernelRunner(const KernelSpec& k, std::uint32_t n, std::uint32_t seed = 1);
  ~KernelRunner() override;
  std::string name() const override;
  Grid grid() const override;
  void launch_rect(const Schedule& s, BlockRect r) override;
  cudaStream_t stream() const override;
  // Dispatch order from an atomic ticket instead of blockIdx (exact launch order).
  void set_ticket(bool on);
  // Hilbert positions from a precomputed device table (default, nullopt or true) or evaluated per block.
  void set_hilbert_table(std::optional<bool> on);
  // One launch of the whole grid under s, timed with events (seconds).
  double time_full(const Schedule& s);
  void poison_output();
  std::vector<float> output() const;
  const std::vector<float>& input(int i) const;
  // Keeps a device copy of the current output, and counts the elements of the current output
  // whose bits differ from it (on the GPU: no copy to the host). Without a kept copy: all.
  void keep_output();
  std::uint64_t output_differences() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tandem::schedule
