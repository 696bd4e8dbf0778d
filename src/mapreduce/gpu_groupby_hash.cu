// GPU group-by, hash path (tandem/mapreduce/hash_groupby.cuh): engines per (key width, value kind)
// and device, one per concurrent caller.
#include "mapreduce/gpu_jobs.hpp"
#include "tandem/mapreduce/hash_groupby.cuh"

namespace tandem::mr::detail {

template <class K, class V>
std::vector<std::pair<K, typename GroupByJob<K, V>::value_type>> gpu_groupby_hash(const K* d_keys, const V* d_values,
                                                                                  std::size_t n, const Options& o,
                                                                                  EngineStats& st, Report& r,
                                                                                  cudaStream_t stream) {
  using H = hash_groupby::HashGroupBy<K, V>;
  auto engine = borrow_engine<H>();
  return engine->run(d_keys, reinterpret_cast<const typename H::VIn*>(d_values), n, o, st, r, stream);
}

template <class K, class V>
void gpu_groupby_hash_on_device(
    const K* d_keys, const V* d_values, std::size_t n, const Options& o, EngineStats& st, Report& r,
    cudaStream_t stream,
    const std::function<void(const K*, const typename GroupByJob<K, V>::value_type*, std::size_t)>& use) {
  using H = hash_groupby::HashGroupBy<K, V>;
  auto engine = borrow_engine<H>();
  const auto d = engine->run_device(d_keys, reinterpret_cast<const typename H::VIn*>(d_values), n, o, st, r, stream);
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

}  // namespace tandem::mr::detail
