// CPU-only builds: the GPU runner exists so callers compile, and says a GPU is needed.
#include "kernels/schedule/kernels.hpp"

#include "tandem/error.hpp"

#if !TANDEM_HAS_CUDA
namespace tandem::schedule {

struct KernelRunner::Impl {};

KernelRunner::KernelRunner(const KernelSpec&, std::uint32_t n, std::uint32_t) {
  check_size(n);
  throw NoDeviceError("running schedule kernels needs a GPU (this build has no CUDA)");
}
KernelRunner::~KernelRunner() = default;
std::string KernelRunner::name() const { return {}; }
Grid KernelRunner::grid() const { return {}; }
void KernelRunner::launch_rect(const Schedule&, BlockRect) {}
void* KernelRunner::stream() const { return nullptr; }
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

}  // namespace tandem::schedule
#endif
