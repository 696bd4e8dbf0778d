#include "groupby/gpu/aggregate.hpp"

#include <cmath>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include "groupby/gpu/finish.cuh"
#include "groupby/gpu/kernels.cuh"
#include "groupby/ops/holistic.hpp"
#include "groupby/ops/registry.hpp"
#include "tandem/core/transfer.hpp"
#include "tandem/cuda/cub_call.hpp"

namespace tandem::gpu_groupby {

// One value column's present values ordered by (group id, value): group g's run starts at
// start[g] and holds its present count of values.
struct SortedValues {
  gpu::DeviceBuffer<std::uint64_t> bits;  // key bits of the values
  gpu::DeviceBuffer<std::uint32_t> gid;
  gpu::DeviceBuffer<std::uint64_t> start;
};

namespace {

template <class S>
__global__ void gather_kernel(const S* per_group, const std::uint32_t* groups, std::size_t m, S* out) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < m;
       i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = per_group[groups[i]];
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

__global__ void distinct_kernel(const std::uint64_t* bits, const std::uint32_t* gid, std::size_t n,
                                std::uint32_t groups, u64* distinct) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const std::uint32_t g = gid[i];
    if (g < groups && (i == 0 || g != gid[i - 1] || bits[i] != bits[i - 1])) atomicAdd(&distinct[g], u64{1});
  }
}

// One pass of top(col, n) by levels over many groups: counts the rows equal to each group's
// level j (`above`) and takes the largest below it as level j + 1.
template <class T>
__global__ void split_at_level(const std::uint32_t* gid, Values<T> in, std::size_t n, const u64* above, u64* count,
                               u64* below) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    if (!present(in.valid, i)) continue;
    const std::uint32_t g = gid[i];
    const u64 b = key_bits(in.v[i]), a = above[g];
    if (b == a) atomicAdd(&count[g], u64{1});
    else if (b < a) atomicMax(&below[g], b);
  }
}

// Output rows, one per occupied group (groups[i] is row i's group id); each returns whether the
// row is present. counts: present values per group id.
struct CountOut {
  const std::uint32_t* groups;
  const std::uint64_t* counts;
  __device__ bool operator()(std::size_t i, std::int64_t& v) const {
    v = static_cast<std::int64_t>(counts[groups[i]]);
    return true;
  }
};

template <class Out>
struct IntegerSumOut {
  const std::uint32_t* groups;
  const std::uint64_t* counts;
  const u64* sums;  // two's complement bits
  __device__ bool operator()(std::size_t i, Out& v) const {
    const std::uint32_t g = groups[i];
    v = static_cast<Out>(sums[g]);
    return counts[g] > 0;
  }
};

struct MeanOut {
  const std::uint32_t* groups;
  const std::uint64_t* counts;
  const double* sums;
  bool mean;  // else the sum
  __device__ bool operator()(std::size_t i, double& v) const {
    const std::uint32_t g = groups[i];
    v = mean ? sums[g] / static_cast<double>(counts[g]) : sums[g];
    return counts[g] > 0;
  }
};

// min and max from ordered bits; a float max whose state is still the identity saw only NaNs.
template <class T>
struct ExtremeOut {
  const std::uint32_t* groups;
  const std::uint64_t* counts;
  const u64* bits;
  bool max_nan;
  __device__ bool operator()(std::size_t i, T& v) const {
    const std::uint32_t g = groups[i];
    if constexpr (std::is_floating_point_v<T>)
      if (max_nan && bits[g] == 0) {
        v = T(NAN);
        return counts[g] > 0;
      }
    v = from_ordered<T>(static_cast<ordered_bits_t<T>>(bits[g]));
    return counts[g] > 0;
  }
};

template <class T>
struct RowValueOut {
  const std::uint32_t* groups;
  const std::uint64_t* counts;
  const u64* row;  // the group's first or last present row
  const T* values;
  __device__ bool operator()(std::size_t i, T& v) const {
    const std::uint32_t g = groups[i];
    if (counts[g] == 0) return false;
    v = values[row[g]];
    return true;
  }
};

struct VarianceOut {
  const std::uint32_t* groups;
  const std::uint64_t* counts;
  const double* m2;  // sums of squared deviations from the mean
  bool root;         // std, else var
  __device__ bool operator()(std::size_t i, double& v) const {
    const std::uint32_t g = groups[i];
    if (counts[g] < 2) return false;
    const double var = m2[g] / static_cast<double>(counts[g] - 1);
    v = root ? sqrt(var) : var;
    return true;
  }
};

// The r-th largest value from the levels: level j is the largest below level j - 1 and occurs
// count[j] times (j < n - 1); the last level is needed once at most, as the levels before it
// fill n - 1 places or more.
template <class T>
struct LevelOut {
  const std::uint32_t* groups;
  const std::uint64_t* counts;
  const u64* level[kTopByLevels];
  const u64* count[kTopByLevels];
  std::size_t n, r;
  __device__ bool operator()(std::size_t i, T& v) const {
    const std::uint32_t g = groups[i];
    const std::uint64_t values = counts[g];
    std::uint64_t before = 0;
    for (std::size_t j = 0; j < n && before < values; ++j) {
      const std::uint64_t here = j + 1 < n ? count[j][g] : values - before;
      if (r < before + here) {
        v = from_ordered<T>(static_cast<ordered_bits_t<T>>(level[j][g]));
        return true;
      }
      before += here;
    }
    return false;
  }
};

// Each group's present values as a sorted run of a column sorted by (group, value).
template <class T>
struct SortedRuns {
  const std::uint32_t* groups;
  const std::uint64_t* counts;
  const std::uint64_t* bits;
  const std::uint64_t* start;
  __device__ T at(std::uint64_t k) const { return from_ordered<T>(static_cast<ordered_bits_t<T>>(bits[k])); }
};

template <class T>
struct SortedTopOut : SortedRuns<T> {
  std::size_t r;
  __device__ bool operator()(std::size_t i, T& v) const {
    const std::uint32_t g = this->groups[i];
    const std::uint64_t n = this->counts[g];
    if (r >= n) return false;
    v = this->at(this->start[g] + n - 1 - r);
    return true;
  }
};

template <class T>
struct QuantileOut : SortedRuns<T> {
  double q;
  __device__ bool operator()(std::size_t i, double& v) const {
    const std::uint32_t g = this->groups[i];
    const std::uint64_t n = this->counts[g], first = this->start[g];
    if (n == 0) return false;
    const auto p = agg::quantile_position(n, q);
    const double a = static_cast<double>(this->at(first + p.lo));
    const double b = p.lo + 1 < n ? static_cast<double>(this->at(first + p.lo + 1)) : a;
    v = agg::interpolate(a, b, p.frac);
    return true;
  }
};

std::vector<DeviceColumn> one(DeviceColumn c) {
  std::vector<DeviceColumn> out;
  out.push_back(std::move(c));
  return out;
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

}  // namespace

Aggregations::Aggregations(const DeviceTable::Impl& t, const GroupIds& ids, const std::uint32_t* present_groups,
                           std::size_t m, const std::uint64_t* rows, cudaStream_t s)
    : t_(t), ids_(ids), groups_(present_groups), m_(m), rows_(rows), s_(s) {}

Aggregations::~Aggregations() = default;

template <class S>
std::vector<S> Aggregations::gathered(const S* per_group) {
  gpu::DeviceBuffer<S> d(m_);
  std::vector<S> host(m_);
  if (m_ == 0) return host;
  TANDEM_GROUPBY_LAUNCH(gather_kernel<S>, m_, s_, per_group, groups_, m_, d.data());
  copy_to_host(host.data(), d.data(), d.bytes(), s_);
  return host;
}

const std::uint64_t* Aggregations::present_counts(const DeviceColumn& c) {
  if (!c.valid()) return rows_;
  auto it = present_.find(&c);
  if (it == present_.end()) {
    auto d = visit_device(c.type, [&](auto v) { return per_group<CountAcc, decltype(v)>(ids_, c, t_.rows, s_); });
    it = present_.emplace(&c, std::move(d)).first;
  }
  return reinterpret_cast<const std::uint64_t*>(it->second.data());
}

template <class T>
const SortedValues& Aggregations::sorted(const DeviceColumn& c) {
  auto& slot = sorted_[&c];
  if (slot) return *slot;
  const std::size_t n = t_.rows;
  const auto groups = static_cast<std::uint32_t>(ids_.groups);
  auto sv = std::make_unique<SortedValues>();
  gpu::DeviceBuffer<std::uint64_t> bits(n);
  gpu::DeviceBuffer<std::uint32_t> gid(n);
  sv->bits = gpu::DeviceBuffer<std::uint64_t>(n);
  sv->gid = gpu::DeviceBuffer<std::uint32_t>(n);
  TANDEM_GROUPBY_LAUNCH(sort_inputs<T>, n, s_, values_of<T>(c), ids_.gid.data(), n, groups, bits.data(), gid.data());
  const int value_bits = int(sizeof(T) * 8), group_bits = bits_for(std::uint64_t{groups} + 1);
  // By value, then stably by group: each group's run ends up in value order.
  gpu::run_cub("radix sort of values", [&](void* t, std::size_t& b) {
    return cub::DeviceRadixSort::SortPairs(t, b, bits.data(), sv->bits.data(), gid.data(), sv->gid.data(), n, 0,
                                           value_bits, s_);
  });
  gpu::run_cub("radix sort of values by group", [&](void* t, std::size_t& b) {
    return cub::DeviceRadixSort::SortPairs(t, b, sv->gid.data(), gid.data(), sv->bits.data(), bits.data(), n, 0,
                                           group_bits, s_);
  });
  sv->bits = std::move(bits);
  sv->gid = std::move(gid);
  const std::uint64_t* counts = present_counts(c);
  sv->start = gpu::DeviceBuffer<std::uint64_t>(ids_.groups);
  gpu::run_cub("scan of group counts", [&](void* t, std::size_t& b) {
    return cub::DeviceScan::ExclusiveSum(t, b, counts, sv->start.data(), ids_.groups, s_);
  });
  slot = std::move(sv);
  return *slot;
}

// top(col, n) for small n without sorting: level 0 (each group's largest) by one pass of atomics,
// then per further level one pass that counts the level above and takes the largest below it
// (two accumulator passes in shared memory when the groups are few).
template <class T>
std::vector<DeviceColumn> Aggregations::top_by_levels(const Aggregation& a, const DeviceColumn& c) {
  const std::size_t n = t_.rows;
  std::vector<gpu::DeviceBuffer<u64>> level, count;
  level.push_back(per_group<LevelAcc, T>(ids_, c, n, s_));
  for (std::size_t j = 1; j < a.n; ++j) {
    const u64* above = level.back().data();
    gpu::DeviceBuffer<u64> occurs(ids_.groups), below(ids_.groups);
    fill<u64>(occurs.data(), occurs.size(), LevelCountAcc::identity(), s_);
    fill<u64>(below.data(), below.size(), LevelAcc::identity(), s_);
    if (ids_.groups <= kSharedGroups) {
      accumulate<LevelCountAcc, T>(ids_.gid.data(), values_of<T>(c), n, ids_.groups, occurs.data(), s_, above);
      accumulate<LevelAcc, T>(ids_.gid.data(), values_of<T>(c), n, ids_.groups, below.data(), s_, above);
    } else {
      TANDEM_GROUPBY_LAUNCH(split_at_level<T>, n, s_, ids_.gid.data(), values_of<T>(c), n, above, occurs.data(),
                            below.data());
    }
    count.push_back(std::move(occurs));
    level.push_back(std::move(below));
  }
  LevelOut<T> out{groups_, present_counts(c), {}, {}, a.n, 0};
  for (std::size_t j = 0; j < a.n; ++j) out.level[j] = level[j].data();
  for (std::size_t j = 0; j + 1 < a.n; ++j) out.count[j] = count[j].data();
  const auto names = output_names(a);
  std::vector<DeviceColumn> cols;
  for (std::size_t r = 0; r < a.n; ++r) {
    out.r = r;
    cols.push_back(finish<T>(names[r], m_, out, s_));
  }
  return cols;
}

template <class T>
std::vector<DeviceColumn> Aggregations::holistic(const Aggregation& a, const DeviceColumn& c) {
  if (a.op == AggOp::top && a.n <= kTopByLevels) return top_by_levels<T>(a, c);
  const SortedValues& sv = sorted<T>(c);
  const std::uint64_t* counts = present_counts(c);
  const auto names = output_names(a);
  if (a.op == AggOp::nunique) {
    gpu::DeviceBuffer<u64> distinct(ids_.groups);
    fill<u64>(distinct.data(), distinct.size(), 0, s_);
    const std::size_t n = t_.rows;
    TANDEM_GROUPBY_LAUNCH(distinct_kernel, n, s_, sv.bits.data(), sv.gid.data(), n,
                          static_cast<std::uint32_t>(ids_.groups), distinct.data());
    const CountOut out{groups_, reinterpret_cast<const std::uint64_t*>(distinct.data())};
    return one(finish<std::int64_t>(names[0], m_, out, s_));
  }
  if (a.op == AggOp::top) {
    std::vector<DeviceColumn> cols;
    for (std::size_t r = 0; r < a.n; ++r)
      cols.push_back(
          finish<T>(names[r], m_, SortedTopOut<T>{{groups_, counts, sv.bits.data(), sv.start.data()}, r}, s_));
    return cols;
  }
  const double q = a.op == AggOp::median ? 0.5 : a.q;
  return one(finish<double>(names[0], m_, QuantileOut<T>{{groups_, counts, sv.bits.data(), sv.start.data()}, q}, s_));
}

// Integer sums in two's complement; a group of 64-bit values whose sum may have wrapped is
// nothing (the CPU engine reruns the group-by).
template <class T>
std::optional<DeviceColumn> Aggregations::integer_sum(const Aggregation& a, const DeviceColumn& c, Report& report) {
  const std::size_t n = t_.rows;
  const auto sums = per_group<SumIntAcc, T>(ids_, c, n, s_);
  const std::uint64_t* counts = present_counts(c);
  if constexpr (sizeof(T) == 8) {
    const auto lo = gathered(per_group<MinAcc, T>(ids_, c, n, s_).data());
    const auto hi = gathered(per_group<MaxAcc, T>(ids_, c, n, s_).data());
    const auto host_counts = gathered(counts);
    for (std::size_t i = 0; i < m_; ++i) {
      if (host_counts[i] == 0) continue;
      const bool wraps = std::is_signed_v<T>
                             ? sum_may_wrap(true, std::int64_t(from_ordered<T>(lo[i])),
                                            std::int64_t(from_ordered<T>(hi[i])), host_counts[i])
                             : sum_may_wrap_unsigned(std::uint64_t(from_ordered<T>(hi[i])), host_counts[i]);
      if (wraps) {
        report.note(agg::describe(a) + ": a group's sum may pass 64 bits");
        return std::nullopt;
      }
    }
  }
  using Out = agg::sum_t<T>;
  return finish<Out>(output_names(a).front(), m_, IntegerSumOut<Out>{groups_, counts, sums.data()}, s_);
}

template <class T>
std::vector<DeviceColumn> Aggregations::extremes(const Aggregation& a, const DeviceColumn& c) {
  const std::size_t n = t_.rows;
  const std::string name = output_names(a).front();
  const std::uint64_t* counts = present_counts(c);
  if (a.op == AggOp::min || a.op == AggOp::max) {
    const bool max = a.op == AggOp::max;
    const auto bits = max ? per_group<MaxAcc, T>(ids_, c, n, s_) : per_group<MinAcc, T>(ids_, c, n, s_);
    return one(finish<T>(name, m_, ExtremeOut<T>{groups_, counts, bits.data(), max}, s_));
  }
  const auto rows =
      a.op == AggOp::first ? per_group<FirstRowAcc, T>(ids_, c, n, s_) : per_group<LastRowAcc, T>(ids_, c, n, s_);
  return one(finish<T>(name, m_, RowValueOut<T>{groups_, counts, rows.data(), c.as<T>()}, s_));
}

template <class T>
std::optional<std::vector<DeviceColumn>> Aggregations::numbers(const Aggregation& a, const DeviceColumn& c,
                                                               Report& report) {
  const std::size_t n = t_.rows;
  const std::string name = output_names(a).front();
  switch (a.op) {
    case AggOp::count: return one(finish<std::int64_t>(name, m_, CountOut{groups_, present_counts(c)}, s_));
    case AggOp::sum:
      if constexpr (std::is_integral_v<T>) {
        auto sum = integer_sum<T>(a, c, report);
        if (!sum) return std::nullopt;
        std::vector<DeviceColumn> out;
        out.push_back(std::move(*sum));
        return out;
      }
      [[fallthrough]];
    case AggOp::mean: {
      const auto sums = per_group<SumF64Acc, T>(ids_, c, n, s_);
      const MeanOut out{groups_, present_counts(c), sums.data(), a.op == AggOp::mean};
      return one(finish<double>(name, m_, out, s_));
    }
    case AggOp::min:
    case AggOp::max:
    case AggOp::first:
    case AggOp::last: return extremes<T>(a, c);
    case AggOp::var:
    case AggOp::std: {
      const auto sums = per_group<SumF64Acc, T>(ids_, c, n, s_);
      const std::uint64_t* counts = present_counts(c);
      gpu::DeviceBuffer<double> means(ids_.groups);
      TANDEM_GROUPBY_LAUNCH(mean_kernel, ids_.groups, s_, sums.data(), counts, ids_.groups, means.data());
      const auto m2 = per_group<SquaredDeviationAcc, T>(ids_, c, n, s_, means.data());
      return one(finish<double>(name, m_, VarianceOut{groups_, counts, m2.data(), a.op == AggOp::std}, s_));
    }
    default: return holistic<T>(a, c);
  }
}

// Strings on the device are dictionary codes, which sort as the strings: min, max, first and last
// pick codes, which stay codes of the column's dictionary; count and nunique count them.
std::vector<DeviceColumn> Aggregations::strings(const Aggregation& a, const DeviceColumn& c) {
  if (a.op == AggOp::nunique) return holistic<std::uint32_t>(a, c);
  Report unused;
  auto cols = std::move(*numbers<std::uint32_t>(a, c, unused));
  if (a.op != AggOp::count) {
    cols.front().type = ColumnType::str;
    cols.front().dictionary = c.dictionary;
  }
  return cols;
}

std::optional<std::vector<DeviceColumn>> Aggregations::run(const Aggregation& a, Report& report) {
  if (a.op == AggOp::count_rows)
    return one(finish<std::int64_t>(output_names(a).front(), m_, CountOut{groups_, rows_}, s_));
  const DeviceColumn& c = t_.column(a.column);
  if (c.type == ColumnType::str) return strings(a, c);
  return visit_numeric(c.type, [&](auto v) { return numbers<decltype(v)>(a, c, report); });
}

}  // namespace tandem::gpu_groupby
