// The hash group-by's entries (entry.hpp): a workspace borrowed from the library's context, the
// engine run on it.
#include "groupby/hash/context.hpp"
#include "groupby/hash/engine.hpp"
#include "groupby/hash/entry.hpp"

namespace tandem::hash_groupby {

template <class K, class V>
std::vector<std::pair<K, group_acc_t<V>>> run_to_host(const K* d_keys, const V* d_values, std::size_t n,
                                                      const Options& o, EngineStats& st, Report& r,
                                                      cudaStream_t stream) {
  using E = Engine<K, V>;
  auto& device = library_context().current();
  auto ws = device.borrow();
  return E(device, *ws).run(d_keys, reinterpret_cast<const typename E::VIn*>(d_values), n, o, st, r, stream);
}

template <class K, class V>
void run_on_device(const K* d_keys, const V* d_values, std::size_t n, const Options& o, EngineStats& st, Report& r,
                   cudaStream_t stream, const std::function<void(const K*, const group_acc_t<V>*, std::size_t)>& use) {
  using E = Engine<K, V>;
  auto& device = library_context().current();
  auto ws = device.borrow();
  const auto d =
      E(device, *ws).run_device(d_keys, reinterpret_cast<const typename E::VIn*>(d_values), n, o, st, r, stream);
  use(d.keys, d.values, d.n);
}

#define TANDEM_HASH_GROUPBY_ENTRY(K, V)                                                                     \
  template std::vector<std::pair<K, group_acc_t<V>>> run_to_host<K, V>(                                     \
      const K*, const V*, std::size_t, const Options&, EngineStats&, Report&, cudaStream_t);                \
  template void run_on_device<K, V>(const K*, const V*, std::size_t, const Options&, EngineStats&, Report&, \
                                    cudaStream_t,                                                           \
                                    const std::function<void(const K*, const group_acc_t<V>*, std::size_t)>&);
TANDEM_HASH_GROUPBY_ENTRY(std::uint32_t, void)
TANDEM_HASH_GROUPBY_ENTRY(std::uint32_t, double)
TANDEM_HASH_GROUPBY_ENTRY(std::uint32_t, std::int64_t)
TANDEM_HASH_GROUPBY_ENTRY(std::uint64_t, void)
TANDEM_HASH_GROUPBY_ENTRY(std::uint64_t, double)
TANDEM_HASH_GROUPBY_ENTRY(std::uint64_t, std::int64_t)

}  // namespace tandem::hash_groupby
