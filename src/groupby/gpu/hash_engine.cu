#include "groupby/gpu/hash_engine.hpp"

#include <type_traits>

#include "groupby/hash/entry.hpp"
#include "groupby/ops/registry.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/cuda/launch.hpp"
#include "tandem/cuda/sequence.hpp"
#include "tandem/cuda/stream.hpp"
#include "tandem/sort.hpp"

namespace tandem::gpu_groupby {
namespace {

constexpr unsigned kThreads = 256;

enum class Field : int { count, sum, min, max, mean };

Field field_of(AggOp op) {
  switch (op) {
    case AggOp::sum: return Field::sum;
    case AggOp::min: return Field::min;
    case AggOp::max: return Field::max;
    case AggOp::mean: return Field::mean;
    default: return Field::count;  // count() and count(col) of a column with nothing missing
  }
}

// Output row i takes the group at order[i] of the engine's result (i without an order). An integer
// sum wraps in the engine's atomics: a group where max |value| * rows may reach 2^63 raises *may_wrap.
template <class Acc, class Out>
__global__ void write_field(const Acc* accs, const std::uint32_t* order, std::size_t n, Field f, Out* out,
                            unsigned* may_wrap) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const Acc a = accs[order ? order[i] : i];
    if constexpr (std::is_same_v<Acc, std::uint64_t>) {
      out[i] = static_cast<Out>(a);
    } else {
      switch (f) {
        case Field::count: out[i] = static_cast<Out>(a.count); break;
        case Field::sum: out[i] = static_cast<Out>(a.sum); break;
        case Field::min: out[i] = static_cast<Out>(a.min); break;
        case Field::max: out[i] = static_cast<Out>(a.max); break;
        case Field::mean: out[i] = static_cast<Out>(static_cast<double>(a.sum) / static_cast<double>(a.count)); break;
      }
      if constexpr (std::is_integral_v<decltype(a.sum)>) {
        if (f == Field::sum || f == Field::mean) {
          const double largest = fmax(fabs(static_cast<double>(a.min)), fabs(static_cast<double>(a.max)));
          if (largest * static_cast<double>(a.count) >= 9.2e18) atomicOr(may_wrap, 1u);
        }
      }
    }
  }
}

template <class T>
DeviceColumn new_column(const std::string& name, ColumnType type, std::size_t rows) {
  DeviceColumn c;
  c.name = name;
  c.type = type;
  c.values = gpu::DeviceBuffer<std::byte>(rows * sizeof(T));
  return c;
}

// S: the key column's type (signed keys travel through the engine as their bits); V: void
// (counts), double or int64.
template <class S, class V>
std::unique_ptr<DeviceTable::Impl> run_typed(const DeviceTable::Impl& t, const GroupBySpec& spec,
                                             const DeviceColumn& key, const DeviceColumn* value, int threads,
                                             Report& report) {
  using K = std::make_unsigned_t<S>;
  using Acc = group_acc_t<V>;
  const std::string where = "gpu" + std::to_string(t.device);
  gpu::Stream stream;
  Stopwatch w;
  GpuEngineStats st;
  auto out = std::make_unique<DeviceTable::Impl>();
  out->device = t.device;
  out->threads = threads;
  unsigned wrapped = 0;
  auto write = [&](const K* group_keys, const Acc* accs, std::size_t groups) {
    out->rows = groups;
    DeviceColumn kc = new_column<S>(key.name, key.type, groups);
    S* keys = reinterpret_cast<S*>(kc.values.data());
    if (groups)
      TANDEM_CUDA(cudaMemcpyAsync(keys, group_keys, groups * sizeof(K), cudaMemcpyDeviceToDevice, stream.get()));
    // The dense-range path's groups come in key order already; its range never spans the sign
    // change of signed keys (that range is 2^31 or more), so that is their signed order too.
    gpu::DeviceBuffer<std::uint32_t> order(st.dense ? 0 : groups);
    gpu::DeviceBuffer<unsigned> may_wrap(1);
    TANDEM_CUDA(cudaMemsetAsync(may_wrap.data(), 0, sizeof(unsigned), stream.get()));
    if (!st.dense && groups > 1) {
      gpu::iota_u32(order.data(), groups, stream.get());
      sort_pairs_device(keys, order.data(), groups, SortOptions{}, stream.get());
    }
    const std::uint32_t* positions = st.dense || groups <= 1 ? nullptr : order.data();
    out->columns.push_back(std::move(kc));
    for (const auto& a : spec.aggs) {
      const ColumnType type = agg::operator_info(a.op).output_type(value ? value->type : ColumnType::i64);
      const Field f = field_of(a.op);
      auto launch = [&](auto* typed) {
        using Out = std::remove_pointer_t<decltype(typed)>;
        DeviceColumn c = new_column<Out>(output_names(a).front(), type, groups);
        if (groups) {
          write_field<Acc, Out><<<gpu::grid_for(groups, kThreads, 1u << 20), kThreads, 0, stream.get()>>>(
              accs, positions, groups, f, reinterpret_cast<Out*>(c.values.data()), may_wrap.data());
          TANDEM_CUDA_LAUNCH("hash group-by: write an aggregation");
        }
        out->columns.push_back(std::move(c));
      };
      if (type == ColumnType::f64) launch(static_cast<double*>(nullptr));
      else launch(static_cast<std::int64_t*>(nullptr));
    }
    if constexpr (std::is_integral_v<V>)
      TANDEM_CUDA(cudaMemcpyAsync(&wrapped, may_wrap.data(), sizeof wrapped, cudaMemcpyDeviceToHost, stream.get()));
    stream.sync();  // the engine's workspace holds accs only during this call
  };
  hash_groupby::run_on_device<K, V>(key.as<K>(), value ? value->as<V>() : nullptr, t.rows, GpuHashOptions{}, st, report,
                                    stream.get(), write);
  explain_stats(report, st);
  for (const auto& a : spec.aggs)
    report.note(agg::describe(a) + ": GPU engine, hash: per-key states updated by atomics");
  if (wrapped) return nullptr;
  out->describe_columns();
  report.add("aggregate", where, w.seconds(),
             std::to_string(out->rows) + " groups, " + std::to_string(t.rows) + " rows, " +
                 std::to_string(spec.aggs.size()) + " aggregation(s) by the hash engine, result on the device");
  return out;
}

template <class S>
std::unique_ptr<DeviceTable::Impl> with_values(const DeviceTable::Impl& t, const GroupBySpec& spec,
                                               const DeviceColumn& key, const DeviceColumn* value, int threads,
                                               Report& report) {
  if (value == nullptr) return run_typed<S, void>(t, spec, key, nullptr, threads, report);
  if (value->type == ColumnType::f64) return run_typed<S, double>(t, spec, key, value, threads, report);
  return run_typed<S, std::int64_t>(t, spec, key, value, threads, report);
}

}  // namespace

std::unique_ptr<DeviceTable::Impl> run_hash(const DeviceTable::Impl& t, const GroupBySpec& spec,
                                            const std::string& value_column, int threads, Report& report) {
  const OnDevice on(t.device);
  const DeviceColumn& key = t.column(spec.by.front());
  const DeviceColumn* value = value_column.empty() ? nullptr : &t.column(value_column);
  switch (key.type) {
    case ColumnType::i32: return with_values<std::int32_t>(t, spec, key, value, threads, report);
    case ColumnType::u32: return with_values<std::uint32_t>(t, spec, key, value, threads, report);
    case ColumnType::i64: return with_values<std::int64_t>(t, spec, key, value, threads, report);
    case ColumnType::u64: return with_values<std::uint64_t>(t, spec, key, value, threads, report);
    default: break;
  }
  throw UsageError("group-by on the hash engine: key '" + key.name + "' is not an integer column");
}

}  // namespace tandem::gpu_groupby
