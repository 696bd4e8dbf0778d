// The dense-range path of the hash group-by (dense_plan.hpp says when and how): integer keys of a
// small range reduced into direct-indexed accumulators and emitted in key order, on the hash
// engine's workspace. Explicit instantiations in dense_engine.cu. Include from .cu files.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "groupby/hash/context.hpp"
#include "groupby/hash/dense_plan.hpp"
#include "groupby/hash/types.hpp"
#include "tandem/core/report.hpp"
#include "tandem/cuda/device_scratch.hpp"

namespace tandem::hash_groupby {

template <class K, class V>
class DenseEngine {
 public:
  using T = Traits<K, V>;
  using Acc = typename T::Acc;
  using VIn = typename T::VIn;

  DenseEngine(const DeviceProps& dev, Workspace& ws) : dev_(dev), ws_(ws) {}

  // The groups of keys[0, M) (values[0, M) unless counting) in ascending key order, left in the
  // workspace until its next run; nothing when the keys' range does not suit the path (why_not()).
  std::optional<gpu::DeviceResult<K, Acc>> run(const K* keys, const VIn* values, std::uint64_t M, EngineStats& st,
                                               Report& rep, cudaStream_t stream);
  const std::string& why_not() const { return why_; }

 private:
  struct Pass;  // one run's plan, buffers and events (dense_engine.cu)

  std::pair<K, K> min_max(const K* keys, std::uint64_t n, std::uint64_t step, cudaStream_t stream);
  void buffers(Pass& a);
  void init_table(const Pass& a);
  void partition(Pass& a);
  void reduce(Pass& a);
  void emit(Pass& a);
  Ctr read_ctr(cudaStream_t stream);
  void report(const Pass& a, EngineStats& st, Report& rep);

  const DeviceProps& dev_;
  Workspace& ws_;
  Ctr* ctr_{nullptr};
  std::string why_;
};

extern template class DenseEngine<std::uint32_t, void>;
extern template class DenseEngine<std::uint32_t, double>;
extern template class DenseEngine<std::uint32_t, std::int64_t>;
extern template class DenseEngine<std::uint64_t, void>;
extern template class DenseEngine<std::uint64_t, double>;
extern template class DenseEngine<std::uint64_t, std::int64_t>;

}  // namespace tandem::hash_groupby
