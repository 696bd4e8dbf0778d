// The library's entry to the 32-bit keys' MSD sort: scratch from the device's sort workspace,
// errors as CudaError, and the cases it leaves to CUB.
#include "sort/device_sort.hpp"
#include "sort/msd_keys32_kernels.cuh"
#include "tandem/cuda/runtime.hpp"

namespace tandem::detail {
namespace {

// The scratch's layout in ws.msd, each part aligned to 256 bytes.
struct MsdLayout {
  std::size_t hist, starts, top_cursor, summary, scan, bytes;
  static std::size_t up(std::size_t b) { return (b + 255) / 256 * 256; }
  explicit MsdLayout(std::size_t scan_bytes) {
    hist = 0;
    starts = hist + up(kMsdKeys32SubBuckets * sizeof(std::uint32_t));
    top_cursor = starts + up(kMsdKeys32SubBuckets * sizeof(std::uint32_t));
    summary = top_cursor + up(kMsdKeys32TopBuckets * sizeof(std::uint32_t));
    scan = summary + up(258 * sizeof(std::uint32_t));
    bytes = scan + up(scan_bytes);
  }
};

bool capturing(cudaStream_t s) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(s, &status) != cudaSuccess) {
    (void)cudaGetLastError();  // the query's own error: the legacy stream during another's capture
    return true;
  }
  return status != cudaStreamCaptureStatusNone;
}

int multiprocessors() {
  int device = 0, sms = 0;
  TANDEM_CUDA(cudaGetDevice(&device));
  TANDEM_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return sms;
}

}  // namespace

bool msd_sort_keys32(const std::uint32_t* in, std::uint32_t* out, std::size_t n, SortWorkspace& ws, cudaStream_t s,
                     std::size_t min_elements) {
  const std::size_t least = min_elements ? min_elements : kMsdKeys32MinElements;
  if (!msd_keys32_size_ok(n, least) || capturing(s)) return false;
  static const std::size_t scan_bytes = msd32::scan_temp_bytes();
  const MsdLayout at(scan_bytes);
  char* base = grow(ws.msd, at.bytes);
  if (ws.msd_host.size() < 258) ws.msd_host = gpu::PinnedBuffer<std::uint32_t>(258);
  if (!ws.msd_counted) ws.msd_counted.emplace(false);
  msd32::Scratch sc;
  sc.hist = reinterpret_cast<std::uint32_t*>(base + at.hist);
  sc.starts = reinterpret_cast<std::uint32_t*>(base + at.starts);
  sc.top_cursor = reinterpret_cast<std::uint32_t*>(base + at.top_cursor);
  sc.summary = reinterpret_cast<std::uint32_t*>(base + at.summary);
  sc.scan_temp = base + at.scan;
  sc.scan_temp_bytes = scan_bytes;
  sc.summary_host = ws.msd_host.data();
  sc.counted = ws.msd_counted->get();
  sc.histogram_blocks = multiprocessors();
  auto* tmp = reinterpret_cast<std::uint32_t*>(grow(ws.alt_keys, n * sizeof(std::uint32_t)));
  auto check = [](cudaError_t e, const char* what) { gpu::check(e, what, __FILE__, __LINE__); };
  return msd32::sort_keys32(in, out, tmp, n, sc, s, check, least).use;
}

}  // namespace tandem::detail
