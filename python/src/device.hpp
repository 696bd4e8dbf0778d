// Work on arrays already in GPU memory (CuPy, PyTorch, anything with __cuda_array_interface__),
// on the caller's stream and without host synchronisation, except where noted. CUDA builds only.
#pragma once
#if TANDEM_HAS_CUDA
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>

#include "tandem/core/report.hpp"
#include "tandem/core/types.hpp"

namespace tandem::python {

// Moves the run of NaNs at the front of sorted keys (and the values at the same places; V is
// std::uint32_t, std::uint64_t, or void for none) behind the rest, as nan_order.hpp on the host:
// a one-thread binary search for the run, then three in-place reversals that do nothing when the
// run is empty. Integer keys: nothing to do.
template <class K, class V>
void move_leading_nans_last_device(K* keys, V* values, std::size_t n, cudaStream_t stream);

// argsort's inputs: keys[i] = in[i] (with `canonical`, as nan_order.hpp's numpy_equal_key: one NaN,
// one zero), positions[i] = i.
template <class K>
void argsort_prepare_device(const K* in, K* keys, std::uint64_t* positions, std::size_t n, bool canonical,
                            cudaStream_t stream);

// Group-by of integer keys on the device (tandem::groupby_on_device on the GPU hash engine),
// result sorted by key.
// Values: none, double or int64 (narrower types are widened by the caller). The engine reads the
// number of groups back (one host synchronisation); `allocate(groups)` is then called to get the
// output pointers (any may be null: not wanted), which are written on `stream`.
struct DeviceGroupOutputs {
  void* keys{nullptr};
  std::int64_t* count{nullptr};
  void* sum{nullptr};  // double or int64, as the values
  void* min{nullptr};
  void* max{nullptr};
  double* mean{nullptr};
};
struct DeviceGroupByCall {
  DType key_type{DType::u32};  // u32, u64, i32 or i64
  const void* keys{nullptr};
  bool has_values{false};
  DType value_type{DType::f64};  // f64 or i64
  const void* values{nullptr};
  std::size_t n{0};
  cudaStream_t stream{nullptr};
  std::function<DeviceGroupOutputs(std::size_t groups)> allocate;
};
Report groupby_device(const DeviceGroupByCall& call);

}  // namespace tandem::python
#endif
