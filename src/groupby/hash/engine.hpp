// The hash group-by's engine: sequences the passes (engine.cu) of one group-by on a borrowed
// workspace. Made per call (cheap: two references); explicit instantiations for u32/u64 keys with
// counts, f64 and i64 values live in engine.cu. Include from .cu files.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "groupby/hash/context.hpp"
#include "groupby/hash/plan.hpp"
#include "groupby/hash/types.hpp"
#include "tandem/core/report.hpp"
#include "tandem/cuda/device_scratch.hpp"

namespace tandem::hash_groupby {

template <class K, class V>
class Engine {
 public:
  using T = Traits<K, V>;
  using Acc = typename T::Acc;
  using VIn = typename T::VIn;

  Engine(DeviceContext& device, Workspace& ws) : dev_(device.props()), ws_(ws) {}

  // Group-by of keys[0, M) (values[0, M) unless counting) already on the device. The result stays
  // in the workspace until its next run.
  gpu::DeviceResult<K, Acc> run_device(const K* keys, const VIn* values, std::uint64_t M, const Options& o,
                                       EngineStats& st, Report& rep, cudaStream_t stream);
  std::vector<std::pair<K, Acc>> run(const K* keys, const VIn* values, std::uint64_t M, const Options& o,
                                     EngineStats& st, Report& rep, cudaStream_t stream);

 private:
  struct Attempt;  // one attempt's inputs, sizes and device pointers (engine.cu)

  HashPlan resolve(const K* keys, const VIn* values, std::uint64_t M, Report& rep, cudaStream_t stream);
  HashPlan tune(const K* keys, const VIn* values, std::uint64_t M, const HashPlan& base, Report& rep,
                cudaStream_t stream);
  std::uint64_t sample_distinct(const K* keys, std::uint64_t m, cudaStream_t stream);
  Ctr read_ctr(cudaStream_t stream, const std::uint32_t* hist = nullptr, const K* keys = nullptr,
               std::uint32_t nkeys = 0);
  bool attempt_once(const K* keys, const VIn* values, std::uint64_t M, const HashPlan& pl, EngineStats& st, Report& rep,
                    cudaStream_t stream);
  void start(Attempt& a);
  void sampling_pass(Attempt& a);
  void global_table(Attempt& a);
  void choose_hot_keys(Attempt& a);
  const K* pick_hot(Attempt& a, const HotChoice& hc);
  void hot_table(Attempt& a);
  void cold_tier(Attempt& a);
  void main_pass(Attempt& a);
  bool compact_result(Attempt& a);
  bool grow(Attempt& a, std::uint32_t overflowed);
  void report(const Attempt& a);

  const DeviceProps& dev_;
  Workspace& ws_;
  Options opts_{};
  Ctr* ctr_{nullptr};
  K* out_keys_{nullptr};
  Acc* out_accs_{nullptr};
  std::size_t n_out_{0};
};

extern template class Engine<std::uint32_t, void>;
extern template class Engine<std::uint32_t, double>;
extern template class Engine<std::uint32_t, std::int64_t>;
extern template class Engine<std::uint64_t, void>;
extern template class Engine<std::uint64_t, double>;
extern template class Engine<std::uint64_t, std::int64_t>;

}  // namespace tandem::hash_groupby
