// GPU group-by: the upload, then the group-by's hash engine (groupby/hash/entry.hpp) or GroupByJob on the chained
// engine (Options::mode = chained). Engines per (key width, value kind) and device, one per
// concurrent caller.
#include "groupby/hash/entry.hpp"
#include "mapreduce/gpu_jobs.hpp"
#include "tandem/core/transfer.hpp"
#include "tandem/mapreduce/gpu_engine.cuh"

namespace tandem::mapreduce::detail {

template <class K, class V>
std::vector<std::pair<K, typename GroupByJob<K, V>::value_type>> gpu_groupby(const K* keys, const V* values,
                                                                             std::size_t n, const Options& o,
                                                                             EngineStats& st, Report& r) {
  gpu::require();
  using Job = GroupByJob<K, V>;
  using VIn = std::conditional_t<std::is_void_v<V>, char, V>;
  if (n == 0) {
    r.note("empty input");
    return {};
  }
  Stopwatch w;
  gpu::DeviceBuffer<K> dk(n);
  gpu::DeviceBuffer<VIn> dv(std::is_void_v<V> ? 0 : n);
  gpu::Stream s;
  copy_to_device(dk.data(), keys, n * sizeof(K), s);
  if constexpr (!std::is_void_v<V>) copy_to_device(dv.data(), values, n * sizeof(V), s);
  s.sync();
  r.add("H2D input", "gpu0", w.seconds(), gpu::format("{} keys", n));
  if (o.mode != Options::Mode::chained && n < (std::uint64_t{1} << 32))
    return hash_groupby::run_to_host<K, V>(dk.data(), reinterpret_cast<const V*>(dv.data()), n, o, st, r, s.get());
  if (o.mode == Options::Mode::auto_) r.note("2^32 records or more: the chained engine");
  Job job{dk.data(), dv.data()};
  return borrow_engine<gpu_engine::Engine<Job>>()->run(job, n, o, st, r);
}

#define TANDEM_GPU_GROUPBY(K, V)                                                               \
  template std::vector<std::pair<K, typename GroupByJob<K, V>::value_type>> gpu_groupby<K, V>( \
      const K*, const V*, std::size_t, const Options&, EngineStats&, Report&);
TANDEM_GPU_GROUPBY(std::uint32_t, void)
TANDEM_GPU_GROUPBY(std::uint32_t, double)
TANDEM_GPU_GROUPBY(std::uint32_t, std::int64_t)
TANDEM_GPU_GROUPBY(std::uint64_t, void)
TANDEM_GPU_GROUPBY(std::uint64_t, double)
TANDEM_GPU_GROUPBY(std::uint64_t, std::int64_t)

}  // namespace tandem::mapreduce::detail
