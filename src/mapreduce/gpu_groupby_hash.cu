// GPU group-by, hash path (hash_groupby/engine.hpp) on the library's context: each call borrows a
// workspace of its device, so concurrent callers never share one.
#include "mapreduce/gpu_jobs.hpp"
#include "mapreduce/hash_groupby/context.hpp"
#include "mapreduce/hash_groupby/engine.hpp"

namespace tandem::mapreduce::detail {

template <class K, class V>
std::vector<std::pair<K, typename GroupByJob<K, V>::value_type>> gpu_groupby_hash(const K* d_keys, const V* d_values,
                                                                                  std::size_t n, const Options& o,
                                                                                  EngineStats& st, Report& r,
                                                                                  cudaStream_t stream) {
  using E = hash_groupby::Engine<K, V>;
  auto& device = hash_groupby::library_context().current();
  auto ws = device.borrow();
  return E(device, *ws).run(d_keys, reinterpret_cast<const typename E::VIn*>(d_values), n, o, st, r, stream);
}

template <class K, class V>
void gpu_groupby_hash_on_device(
    const K* d_keys, const V* d_values, std::size_t n, const Options& o, EngineStats& st, Report& r,
    cudaStream_t stream,
    const std::function<void(const K*, const typename GroupByJob<K, V>::value_type*, std::size_t)>& use) {
  using E = hash_groupby::Engine<K, V>;
  auto& device = hash_groupby::library_context().current();
  auto ws = device.borrow();
  const auto d =
      E(device, *ws).run_device(d_keys, reinterpret_cast<const typename E::VIn*>(d_values), n, o, st, r, stream);
  use(d.keys, d.values, d.n);
}

#define TANDEM_GPU_GROUPBY_HASH(K, V)                                                               \
  template std::vector<std::pair<K, typename GroupByJob<K, V>::value_type>> gpu_groupby_hash<K, V>( \
      const K*, const V*, std::size_t, const Options&, EngineStats&, Report&, cudaStream_t);        \
  template void gpu_groupby_hash_on_device<K, V>(                                                   \
      const K*, const V*, std::size_t, const Options&, EngineStats&, Report&, cudaStream_t,         \
      const std::function<void(const K*, const typename GroupByJob<K, V>::value_type*, std::size_t)>&);
TANDEM_GPU_GROUPBY_HASH(std::uint32_t, void)
TANDEM_GPU_GROUPBY_HASH(std::uint32_t, double)
TANDEM_GPU_GROUPBY_HASH(std::uint32_t, std::int64_t)
TANDEM_GPU_GROUPBY_HASH(std::uint64_t, void)
TANDEM_GPU_GROUPBY_HASH(std::uint64_t, double)
TANDEM_GPU_GROUPBY_HASH(std::uint64_t, std::int64_t)

}  // namespace tandem::mapreduce::detail
