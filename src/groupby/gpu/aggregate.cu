#include "groupby/gpu/aggregate.hpp"

#include <cmath>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include "groupby/cpu_output.hpp"
#include "groupby/gpu/kernels.cuh"
#include "groupby/ops/holistic.hpp"
#include "groupby/ops/registry.hpp"
#include "tandem/core/transfer.hpp"

namespace tandem::gpu_groupby {

// One value column's present values ordered by (group id, value): group g's run starts at
// start[g] and holds its present count of values.
struct SortedValues {
  gpu::DeviceBuffer<std::uint64_t> bits;  // key bits of the values
  gpu::DeviceBuffer<std::uint32_t> gid;
  gpu::DeviceBuffer<std::uint64_t> start;
};

namespace {

#define LAUNCH(kernel, n, ...)                        \
  do {                                                \
    kernel<<<grid_for(n), 256, 0, s_>>>(__VA_ARGS__); \
    TANDEM_CUDA_LAUNCH(#kernel);                      \
  } while (0)

template <class S>
__global__ void gather_kernel(const S* per_group, const std::uint32_t* groups, std::size_t m, S* out) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < m;
       i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = per_group[groups[i]];
}

template <class T>
__global__ void values_at_rows(const T* v, const std::uint64_t* rows, std::size_t m, T* out) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < m;
       i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = v[rows[i] == ~std::uint64_t{0} ? 0 : rows[i]];
}

__global__ void mean_kernel(const double* sum, const std::uint64_t* count, std::size_t groups, double* mean) {
  for (std::size_t g = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; g < groups;
       g += std::size_t(gridDim.x) * blockDim.x)
    mean[g] = count[g] ? sum[g] / static_cast<double>(count[g]) : 0.0;
}

// Key bits of every row, and its group id (or `groups` for a missing value, which sorts last).
template <class T>
__global__ void sort_inputs(Values<T> in, const std::uint32_t* gid, std::size_t n, std::uint32_t groups,
                            std::uint64_t* bits, std::uint32_t* g) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    bits[i] = key_bits(in.v[i]);
    g[i] = present(in.valid, i) ? gid[i] : groups;
  }
}

template <class T>
__global__ void quantile_kernel(const std::uint64_t* bits, const std::uint64_t* start, const std::uint64_t* count,
                                const std::uint32_t* groups, std::size_t m, double q, double* out) {
  using Bits = ordered_bits_t<T>;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < m;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const std::uint32_t g = groups[i];
    const std::uint64_t n = count[g];
    if (n == 0) continue;
    const auto at = agg::quantile_position(n, q);
    const double a = static_cast<double>(from_ordered<T>(static_cast<Bits>(bits[start[g] + at.lo])));
    const double b =
        at.lo + 1 < n ? static_cast<double>(from_ordered<T>(static_cast<Bits>(bits[start[g] + at.lo + 1]))) : a;
    out[i] = agg::interpolate(a, b, at.frac);
  }
}

// The k largest of each group's run, largest first (missing past the group's count).
__global__ void top_kernel(const std::uint64_t* bits, const std::uint64_t* start, const std::uint64_t* count,
                           const std::uint32_t* groups, std::size_t m, std::size_t k, std::uint64_t* out) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < m;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const std::uint32_t g = groups[i];
    const std::uint64_t n = count[g], end = start[g] + n;
    for (std::size_t j = 0; j < k; ++j) out[j * m + i] = j < n ? bits[end - 1 - j] : 0;
  }
}

__global__ void distinct_kernel(const std::uint64_t* bits, const std::uint32_t* gid, std::size_t n,
                                std::uint32_t groups, u64* distinct) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const std::uint32_t g = gid[i];
    if (g < groups && (i == 0 || g != gid[i - 1] || bits[i] != bits[i - 1])) atomicAdd(&distinct[g], u64{1});
  }
}

// Per-group states of Acc over a column, started at the identity.
template <class Acc, class T>
gpu::DeviceBuffer<typename Acc::S> per_group(const GroupIds& ids, const DeviceColumn& c, std::size_t n, cudaStream_t s,
                                             const void* ctx = nullptr) {
  gpu::DeviceBuffer<typename Acc::S> out(ids.groups);
  fill<typename Acc::S>(out.data(), out.size(), Acc::identity(), s);
  accumulate<Acc, T>(ids.gid.data(), values_of<T>(c), n, ids.groups, out.data(), s, ctx);
  return out;
}

// The column with rows of groups that hold no present value (counts[i] == 0) missing too.
Column with_missing(Column c, const std::uint64_t* counts) {
  std::vector<std::uint8_t> bits((c.length + 7) / 8, 0);
  bool any = false;
  for (std::size_t i = 0; i < c.length; ++i) {
    if (c.present(i) && counts[i] > 0) bits[i >> 3] |= static_cast<std::uint8_t>(1u << (i & 7));
    else any = true;
  }
  if (any) c.validity = Buffer::take(std::move(bits));
  return c;
}

}  // namespace

Aggregations::Aggregations(const DeviceTable::Impl& t, const GroupIds& ids, const std::uint32_t* present_groups,
                           std::size_t m, const std::uint64_t* rows, cudaStream_t s, int threads)
    : t_(t), ids_(ids), groups_(present_groups), m_(m), rows_(rows), s_(s), threads_(threads) {}

Aggregations::~Aggregations() = default;

template <class S>
cpu_groupby::Scratch<S> Aggregations::gathered(const S* per_group) {
  gpu::DeviceBuffer<S> d(m_);
  cpu_groupby::Scratch<S> host(m_);
  if (m_ == 0) return host;
  LAUNCH(gather_kernel<S>, m_, per_group, groups_, m_, d.data());
  copy_to_host(host.data(), d.data(), d.bytes(), s_);
  return host;
}

const std::uint64_t* Aggregations::present_counts(const DeviceColumn& c) {
  const std::uint64_t* counts = rows_;
  if (c.valid()) {
    auto it = present_.find(&c);
    if (it == present_.end()) {
      const std::size_t n = t_.host.rows();
      auto d = visit_device(c.type, [&](auto v) { return per_group<CountAcc, decltype(v)>(ids_, c, n, s_); });
      it = present_.emplace(&c, std::move(d)).first;
    }
    counts = reinterpret_cast<const std::uint64_t*>(it->second.data());
  }
  host_counts_ = host_counts(c.valid() ? &c : nullptr, counts);
  return counts;
}

const std::uint64_t* Aggregations::host_counts(const DeviceColumn* c, const std::uint64_t* device_counts) {
  auto& host = host_present_[c];
  if (host.size() != m_) host = gathered(device_counts);
  return host.data();
}

template <class T>
const SortedValues& Aggregations::sorted(const DeviceColumn& c) {
  auto& slot = sorted_[&c];
  if (slot) return *slot;
  const std::size_t n = t_.host.rows();
  const auto groups = static_cast<std::uint32_t>(ids_.groups);
  auto sv = std::make_unique<SortedValues>();
  gpu::DeviceBuffer<std::uint64_t> bits(n);
  gpu::DeviceBuffer<std::uint32_t> gid(n);
  sv->bits = gpu::DeviceBuffer<std::uint64_t>(n);
  sv->gid = gpu::DeviceBuffer<std::uint32_t>(n);
  LAUNCH(sort_inputs<T>, n, values_of<T>(c), ids_.gid.data(), n, groups, bits.data(), gid.data());
  const int value_bits = int(sizeof(T) * 8), group_bits = bits_for(std::uint64_t{groups} + 1);
  // By value, then stably by group: each group's run ends up in value order.
  run_cub("radix sort of values", [&](void* t, std::size_t& b) {
    return cub::DeviceRadixSort::SortPairs(t, b, bits.data(), sv->bits.data(), gid.data(), sv->gid.data(), n, 0,
                                           value_bits, s_);
  });
  run_cub("radix sort of values by group", [&](void* t, std::size_t& b) {
    return cub::DeviceRadixSort::SortPairs(t, b, sv->gid.data(), gid.data(), sv->bits.data(), bits.data(), n, 0,
                                           group_bits, s_);
  });
  sv->bits = std::move(bits);
  sv->gid = std::move(gid);
  const std::uint64_t* counts = present_counts(c);
  sv->start = gpu::DeviceBuffer<std::uint64_t>(ids_.groups);
  run_cub("scan of group counts", [&](void* t, std::size_t& b) {
    return cub::DeviceScan::ExclusiveSum(t, b, counts, sv->start.data(), ids_.groups, s_);
  });
  slot = std::move(sv);
  return *slot;
}

// top(col, n) for small n without sorting: 2n passes of atomics (LevelAcc, LevelCountAcc), then
// each group's n largest read off its levels.
template <class T>
std::vector<Column> Aggregations::top_by_levels(const Aggregation& a, const DeviceColumn& c) {
  const std::size_t n = t_.host.rows();
  using Bits = ordered_bits_t<T>;
  std::vector<cpu_groupby::Scratch<std::uint64_t>> level, count;
  gpu::DeviceBuffer<u64> above;
  for (std::size_t j = 0; j < a.n; ++j) {
    auto next = per_group<LevelAcc, T>(ids_, c, n, s_, j == 0 ? nullptr : above.data());
    const auto occurs = per_group<LevelCountAcc, T>(ids_, c, n, s_, next.data());
    level.push_back(gathered(reinterpret_cast<const std::uint64_t*>(next.data())));
    count.push_back(gathered(reinterpret_cast<const std::uint64_t*>(occurs.data())));
    above = std::move(next);
  }
  // values[i * a.n + r]: group i's r-th largest, when it has that many.
  std::vector<std::optional<T>> values(m_ * a.n);
  for (std::size_t i = 0; i < m_; ++i) {
    std::size_t r = 0;
    for (std::size_t j = 0; j < a.n && r < a.n && count[j][i] > 0; ++j)
      for (std::uint64_t k = 0; k < count[j][i] && r < a.n; ++k)
        values[i * a.n + r++] = from_ordered<T>(static_cast<Bits>(level[j][i]));
  }
  const auto names = output_names(a);
  std::vector<Column> out;
  for (std::size_t r = 0; r < a.n; ++r)
    out.push_back(
        cpu_groupby::build_numbers<T>(names[r], m_, threads_, [&](std::size_t i) { return values[i * a.n + r]; }));
  return out;
}

template <class T>
std::vector<Column> Aggregations::holistic(const Aggregation& a, const DeviceColumn& c) {
  if (a.op == AggOp::top && a.n <= kTopByLevels) return top_by_levels<T>(a, c);
  const SortedValues& sv = sorted<T>(c);
  const std::uint64_t* counts = present_counts(c);
  const auto names = output_names(a);
  using Bits = ordered_bits_t<T>;
  if (a.op == AggOp::nunique) {
    gpu::DeviceBuffer<u64> distinct(ids_.groups);
    fill<u64>(distinct.data(), distinct.size(), 0, s_);
    const std::size_t n = t_.host.rows();
    LAUNCH(distinct_kernel, n, sv.bits.data(), sv.gid.data(), n, static_cast<std::uint32_t>(ids_.groups),
           distinct.data());
    const auto d = gathered(reinterpret_cast<const std::uint64_t*>(distinct.data()));
    return {cpu_groupby::build_numbers<std::int64_t>(
        names[0], m_, threads_, [&](std::size_t i) { return std::optional(static_cast<std::int64_t>(d[i])); })};
  }
  if (a.op == AggOp::top) {
    gpu::DeviceBuffer<std::uint64_t> top(a.n * m_);
    if (m_) LAUNCH(top_kernel, m_, sv.bits.data(), sv.start.data(), counts, groups_, m_, a.n, top.data());
    std::vector<std::uint64_t> host(top.size());
    if (m_) TANDEM_CUDA(cudaMemcpyAsync(host.data(), top.data(), top.bytes(), cudaMemcpyDeviceToHost, s_));
    TANDEM_CUDA(cudaStreamSynchronize(s_));
    std::vector<Column> out;
    for (std::size_t j = 0; j < a.n; ++j)
      out.push_back(cpu_groupby::build_numbers<T>(names[j], m_, threads_, [&](std::size_t i) -> std::optional<T> {
        if (host_counts_[i] <= j) return std::nullopt;
        return from_ordered<T>(static_cast<Bits>(host[j * m_ + i]));
      }));
    return out;
  }
  const double q = a.op == AggOp::median ? 0.5 : a.q;
  gpu::DeviceBuffer<double> qs(m_);
  if (m_) LAUNCH(quantile_kernel<T>, m_, sv.bits.data(), sv.start.data(), counts, groups_, m_, q, qs.data());
  std::vector<double> host(m_);
  if (m_) TANDEM_CUDA(cudaMemcpyAsync(host.data(), qs.data(), qs.bytes(), cudaMemcpyDeviceToHost, s_));
  TANDEM_CUDA(cudaStreamSynchronize(s_));
  return {cpu_groupby::build_numbers<double>(names[0], m_, threads_, [&](std::size_t i) -> std::optional<double> {
    if (host_counts_[i] == 0) return std::nullopt;
    return host[i];
  })};
}

template <class T>
std::optional<std::vector<Column>> Aggregations::numbers(const Aggregation& a, const DeviceColumn& c, Report& report) {
  const std::size_t n = t_.host.rows();
  const std::string name = output_names(a).front();
  using Bits = ordered_bits_t<T>;
  const auto as_u64 = [](const auto& d) { return reinterpret_cast<const std::uint64_t*>(d.data()); };
  switch (a.op) {
    case AggOp::count: {
      present_counts(c);
      return std::vector{cpu_groupby::build_numbers<std::int64_t>(name, m_, threads_, [&](std::size_t i) {
        return std::optional(static_cast<std::int64_t>(host_counts_[i]));
      })};
    }
    case AggOp::sum:
      if constexpr (std::is_integral_v<T>) {
        const auto sums = gathered(as_u64(per_group<SumIntAcc, T>(ids_, c, n, s_)));
        present_counts(c);
        if constexpr (sizeof(T) == 8) {
          const auto lo = gathered(as_u64(per_group<MinAcc, T>(ids_, c, n, s_)));
          const auto hi = gathered(as_u64(per_group<MaxAcc, T>(ids_, c, n, s_)));
          for (std::size_t i = 0; i < m_; ++i) {
            if (host_counts_[i] == 0) continue;
            const bool wraps = std::is_signed_v<T>
                                   ? sum_may_wrap(true, std::int64_t(from_ordered<T>(lo[i])),
                                                  std::int64_t(from_ordered<T>(hi[i])), host_counts_[i])
                                   : sum_may_wrap_unsigned(std::uint64_t(from_ordered<T>(hi[i])), host_counts_[i]);
            if (wraps) {
              report.note(agg::describe(a) + ": a group's sum may pass 64 bits");
              return std::nullopt;
            }
          }
        }
        using Out = agg::sum_t<T>;
        return std::vector{
            cpu_groupby::build_numbers<Out>(name, m_, threads_, [&](std::size_t i) -> std::optional<Out> {
              if (host_counts_[i] == 0) return std::nullopt;
              return static_cast<Out>(sums[i]);
            })};
      }
      [[fallthrough]];
    case AggOp::mean: {
      const auto sums = gathered(per_group<SumF64Acc, T>(ids_, c, n, s_).data());
      present_counts(c);
      const bool mean = a.op == AggOp::mean;
      return std::vector{
          cpu_groupby::build_numbers<double>(name, m_, threads_, [&](std::size_t i) -> std::optional<double> {
            if (host_counts_[i] == 0) return std::nullopt;
            return mean ? sums[i] / static_cast<double>(host_counts_[i]) : sums[i];
          })};
    }
    case AggOp::min:
    case AggOp::max:
    case AggOp::first:
    case AggOp::last: {
      cpu_groupby::Scratch<std::uint64_t> bits;
      if (a.op == AggOp::min || a.op == AggOp::max) {
        bits = gathered(
            as_u64(a.op == AggOp::min ? per_group<MinAcc, T>(ids_, c, n, s_) : per_group<MaxAcc, T>(ids_, c, n, s_)));
      } else {
        const auto rows =
            a.op == AggOp::first ? per_group<FirstRowAcc, T>(ids_, c, n, s_) : per_group<LastRowAcc, T>(ids_, c, n, s_);
        gpu::DeviceBuffer<std::uint64_t> at(m_);
        gpu::DeviceBuffer<T> v(m_);
        if (m_) {
          LAUNCH(gather_kernel<std::uint64_t>, m_, as_u64(rows), groups_, m_, at.data());
          LAUNCH(values_at_rows<T>, m_, c.as<T>(), at.data(), m_, v.data());
        }
        cpu_groupby::Scratch<T> host(m_);
        if (m_) TANDEM_CUDA(cudaMemcpyAsync(host.data(), v.data(), v.bytes(), cudaMemcpyDeviceToHost, s_));
        TANDEM_CUDA(cudaStreamSynchronize(s_));
        bits.resize(m_);
        for (std::size_t i = 0; i < m_; ++i) bits[i] = static_cast<std::uint64_t>(to_ordered(host[i]));
      }
      present_counts(c);
      const bool max_nan = a.op == AggOp::max && std::is_floating_point_v<T>;
      return std::vector{cpu_groupby::build_numbers<T>(name, m_, threads_, [&](std::size_t i) -> std::optional<T> {
        if (host_counts_[i] == 0) return std::nullopt;
        if (max_nan && bits[i] == 0) return std::numeric_limits<T>::quiet_NaN();
        return from_ordered<T>(static_cast<Bits>(bits[i]));
      })};
    }
    case AggOp::var:
    case AggOp::std: {
      const auto sums = per_group<SumF64Acc, T>(ids_, c, n, s_);
      const std::uint64_t* counts = present_counts(c);
      gpu::DeviceBuffer<double> means(ids_.groups);
      LAUNCH(mean_kernel, ids_.groups, sums.data(), counts, ids_.groups, means.data());
      const auto m2 = gathered(per_group<SquaredDeviationAcc, T>(ids_, c, n, s_, means.data()).data());
      const bool root = a.op == AggOp::std;
      return std::vector{
          cpu_groupby::build_numbers<double>(name, m_, threads_, [&](std::size_t i) -> std::optional<double> {
            if (host_counts_[i] < 2) return std::nullopt;
            const double var = m2[i] / static_cast<double>(host_counts_[i] - 1);
            return root ? std::sqrt(var) : var;
          })};
    }
    default: return holistic<T>(a, c);
  }
}

// Strings on the device are dictionary codes, which sort as the strings: min, max, first and last
// pick codes and decode them; count and nunique count them.
std::vector<Column> Aggregations::strings(const Aggregation& a, const DeviceColumn& c) {
  if (a.op == AggOp::nunique) return holistic<std::uint32_t>(a, c);
  Report unused;
  auto codes_as_numbers = numbers<std::uint32_t>(a, c, unused);
  Column& col = codes_as_numbers->front();
  if (a.op == AggOp::count) return std::move(*codes_as_numbers);
  const auto codes = col.numbers<std::uint32_t>();
  std::vector<std::uint32_t> picked(codes.size());
  for (std::size_t i = 0; i < picked.size(); ++i) picked[i] = col.present(i) ? codes[i] : 0;  // any valid code
  Column decoded = c.dictionary->decode(std::span<const std::uint32_t>(picked), threads_);
  decoded.name = col.name;
  return {with_missing(std::move(decoded), host_counts_)};
}

std::optional<std::vector<Column>> Aggregations::run(const Aggregation& a, Report& report) {
  if (a.op == AggOp::count_rows) {
    const std::uint64_t* counts = host_counts(nullptr, rows_);
    return std::vector{cpu_groupby::build_numbers<std::int64_t>(
        output_names(a).front(), m_, threads_,
        [&](std::size_t i) { return std::optional(static_cast<std::int64_t>(counts[i])); })};
  }
  const DeviceColumn& c = t_.column(a.column);
  if (c.type == ColumnType::str) return strings(a, c);
  return visit_numeric(c.type, [&](auto v) { return numbers<decltype(v)>(a, c, report); });
}

}  // namespace tandem::gpu_groupby
