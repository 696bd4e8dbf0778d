#include "gpu/engine_groupby.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>

#include "groupby/hash/entry.hpp"
#include "mapreduce/gpu_jobs.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/transfer.hpp"
#include "tandem/mapreduce/gpu_engine.cuh"

namespace engine_test {
namespace {

using namespace tandem;
using mapreduce::GroupByJob;

// V: void, double or int64; K: the unsigned key type the engines take.
template <class K, class V>
std::vector<std::pair<K, group_acc_t<V>>> on_gpu(const K* keys, const V* values, std::size_t n, const Options& o,
                                                 GroupBy& g) {
  using VIn = std::conditional_t<std::is_void_v<V>, char, V>;
  if (n == 0) return {};
  gpu::DeviceBuffer<K> dk(n);
  gpu::DeviceBuffer<VIn> dv(std::is_void_v<V> ? 0 : n);
  gpu::Stream s;
  copy_to_device(dk.data(), keys, n * sizeof(K), s);
  if constexpr (!std::is_void_v<V>) copy_to_device(dv.data(), values, n * sizeof(V), s);
  s.sync();
  if (o.mode != Options::Mode::chained)
    return hash_groupby::run_to_host<K, V>(dk.data(), reinterpret_cast<const V*>(dv.data()), n, o, g.gpu, g.report,
                                           s.get());
  using Job = GroupByJob<K, V>;
  Job job{dk.data(), dv.data()};
  return mapreduce::detail::borrow_engine<mapreduce::gpu_engine::Engine<Job>>()->run(job, n, o, g.gpu, g.report);
}

template <class S, class V, class VIn>
void run(GroupBy& g, const S* keys, std::size_t n, const VIn* values, const Options& o) {
  using K = std::make_unsigned_t<S>;
  std::vector<std::conditional_t<std::is_void_v<V>, char, V>> wide;
  if constexpr (!std::is_void_v<V>) wide.assign(values, values + n);  // widened as the engines take them
  const auto* vals = reinterpret_cast<const std::conditional_t<std::is_void_v<V>, void, V>*>(wide.data());
  std::vector<std::pair<K, group_acc_t<V>>> pairs;
  if (o.device == Device::cpu) {
    const auto cpu = mapreduce::cpu_mapreduce(GroupByJob<S, V>{keys, wide.data()}, n, o);
    for (const auto& [k, a] : cpu) pairs.emplace_back(static_cast<K>(k), a);
  } else {
    pairs = on_gpu<K, V>(reinterpret_cast<const K*>(keys), vals, n, o, g);
    explain_stats(g.report, g.gpu);
  }
  for (const auto& [k, a] : pairs) {
    GroupRow r;
    r.key_bits = k;
    if constexpr (std::is_void_v<V>) {
      r.count = a;
    } else if constexpr (std::is_floating_point_v<V>) {
      r = GroupRow{k, a.count, a.sum, a.min, a.max};
    } else {
      r.count = a.count, r.isum = a.sum, r.imin = a.min, r.imax = a.max;
    }
    g.rows.push_back(r);
  }
  std::sort(g.rows.begin(), g.rows.end(), [](const GroupRow& a, const GroupRow& b) {
    return static_cast<S>(static_cast<K>(a.key_bits)) < static_cast<S>(static_cast<K>(b.key_bits));
  });
}

template <class S>
void with_values(GroupBy& g, const S* keys, std::size_t n, DType vt, const void* values, bool has, const Options& o) {
  if (!has) return run<S, void, char>(g, keys, n, nullptr, o);
  switch (vt) {
    case DType::f32: return run<S, double>(g, keys, n, static_cast<const float*>(values), o);
    case DType::f64: return run<S, double>(g, keys, n, static_cast<const double*>(values), o);
    case DType::i32: return run<S, std::int64_t>(g, keys, n, static_cast<const std::int32_t*>(values), o);
    case DType::i64: return run<S, std::int64_t>(g, keys, n, static_cast<const std::int64_t*>(values), o);
    default: break;
  }
  throw UsageError("value type " + std::string(to_string(vt)) + ": expected f32, f64, i32 or i64");
}

}  // namespace

GroupBy groupby(DType kt, const void* keys, std::size_t n, DType vt, const void* values, std::size_t value_count,
                bool has_values, const Options& o) {
  if (has_values && value_count != n)
    throw InputError("keys and values differ in length: " + std::to_string(n) + " keys but " +
                     std::to_string(value_count) + " values");
  GroupBy g;
  switch (kt) {
    case DType::u32: with_values(g, static_cast<const std::uint32_t*>(keys), n, vt, values, has_values, o); break;
    case DType::u64: with_values(g, static_cast<const std::uint64_t*>(keys), n, vt, values, has_values, o); break;
    case DType::i32: with_values(g, static_cast<const std::int32_t*>(keys), n, vt, values, has_values, o); break;
    case DType::i64: with_values(g, static_cast<const std::int64_t*>(keys), n, vt, values, has_values, o); break;
    default: throw UsageError("key type " + std::string(to_string(kt)) + ": expected u32, u64, i32 or i64");
  }
  return g;
}

}  // namespace engine_test
