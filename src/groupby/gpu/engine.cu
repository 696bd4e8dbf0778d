#include "groupby/gpu/engine.hpp"

#include <cub/device/device_scan.cuh>

#include "core/device_context.hpp"
#include "groupby/gpu/aggregate.hpp"
#include "groupby/gpu/group_ids.hpp"
#include "groupby/gpu/kernels.cuh"
#include "groupby/ops/registry.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/cuda/cub_call.hpp"
#include "tandem/cuda/stream.hpp"

namespace tandem::gpu_groupby {
namespace {

__global__ void occupied_flags(const std::uint64_t* rows, std::size_t groups, std::uint32_t* flags) {
  for (std::size_t g = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; g < groups;
       g += std::size_t(gridDim.x) * blockDim.x)
    flags[g] = rows[g] > 0;
}

__global__ void scatter_occupied(const std::uint64_t* rows, const std::uint32_t* at, std::size_t groups,
                                 std::uint32_t* out) {
  for (std::size_t g = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; g < groups;
       g += std::size_t(gridDim.x) * blockDim.x)
    if (rows[g] > 0) out[at[g]] = static_cast<std::uint32_t>(g);
}

// The group ids holding at least one row, ascending.
gpu::DeviceBuffer<std::uint32_t> occupied(const std::uint64_t* rows, std::size_t groups, cudaStream_t s) {
  gpu::DeviceBuffer<std::uint32_t> at(groups + 1);
  occupied_flags<<<grid_for(groups), 256, 0, s>>>(rows, groups, at.data());
  TANDEM_CUDA_LAUNCH("occupied_flags");
  gpu::run_cub("scan of occupied groups", [&](void* t, std::size_t& b) {
    return cub::DeviceScan::ExclusiveSum(t, b, at.data(), at.data(), groups + 1, s);
  });
  std::uint32_t m = 0;
  TANDEM_CUDA(cudaMemcpyAsync(&m, at.data() + groups, sizeof m, cudaMemcpyDeviceToHost, s));
  TANDEM_CUDA(cudaStreamSynchronize(s));
  gpu::DeviceBuffer<std::uint32_t> out(m);
  if (m) {
    scatter_occupied<<<grid_for(groups), 256, 0, s>>>(rows, at.data(), groups, out.data());
    TANDEM_CUDA_LAUNCH("scatter_occupied");
  }
  return out;
}

}  // namespace

std::size_t present_rows(const DeviceColumn& c, std::size_t rows) {
  if (c.valid() == nullptr || rows == 0) return rows;
  gpu::Stream stream;
  gpu::DeviceBuffer<u64> count(1);
  fill<u64>(count.data(), 1, 0, stream);
  visit_device(c.type, [&](auto v) {
    using T = decltype(v);
    accumulate<CountAcc, T>(nullptr, values_of<T>(c), rows, 1, count.data(), stream);
  });
  u64 n = 0;
  TANDEM_CUDA(cudaMemcpyAsync(&n, count.data(), sizeof n, cudaMemcpyDeviceToHost, stream));
  stream.sync();
  return static_cast<std::size_t>(n);
}

// The SM count of a device, read once and kept in its context (a thread may switch devices).
struct Multiprocessors {
  int count{0};
};

int grid_for(std::size_t n, int per_sm) {
  const int sms = detail::current_device()
                      .part<Multiprocessors>([](int device) {
                        auto m = std::make_unique<Multiprocessors>();
                        TANDEM_CUDA(cudaDeviceGetAttribute(&m->count, cudaDevAttrMultiProcessorCount, device));
                        return m;
                      })
                      .count;
  const std::size_t wanted = (n + 255) / 256;
  return static_cast<int>(std::max<std::size_t>(1, std::min<std::size_t>(wanted, std::size_t(sms) * per_sm)));
}

std::unique_ptr<DeviceTable::Impl> run(const DeviceTable::Impl& t, const GroupBySpec& spec, int threads,
                                       Report& report) {
  const OnDevice on(t.device);
  const std::string where = "gpu" + std::to_string(t.device);
  gpu::Stream stream;
  const std::size_t n = t.rows;
  const GroupIds ids = group_ids(t, spec.by, stream, report);
  Stopwatch w;
  gpu::DeviceBuffer<u64> rows(ids.groups);
  fill<u64>(rows.data(), rows.size(), 0, stream);
  accumulate<CountAcc, std::uint32_t>(ids.gid.data(), Values<std::uint32_t>{ids.gid.data(), nullptr}, n, ids.groups,
                                      rows.data(), stream);
  const auto* row_counts = reinterpret_cast<const std::uint64_t*>(rows.data());
  const auto groups = occupied(row_counts, ids.groups, stream);
  auto out = std::make_unique<DeviceTable::Impl>();
  out->rows = groups.size();
  out->device = t.device;
  out->threads = threads;
  out->columns = key_columns(ids, groups.data(), groups.size(), stream);
  Aggregations aggs(t, ids, groups.data(), groups.size(), row_counts, stream);
  for (const auto& a : spec.aggs) {
    auto cols = aggs.run(a, report);
    if (!cols) return nullptr;
    for (auto& c : *cols) out->columns.push_back(std::move(c));
    const bool holistic = agg::operator_info(a.op).holistic;
    report.note(agg::describe(a) + ": GPU engine, " +
                (holistic ? "holistic: values sorted by (group, value), each group's run read"
                          : "decomposable: per-group states updated by atomics"));
  }
  stream.sync();
  out->describe_columns();
  report.add("aggregate", where, w.seconds(),
             std::to_string(groups.size()) + " groups, " + std::to_string(n) + " rows, " +
                 std::to_string(spec.aggs.size()) + " aggregation(s), result on the device");
  return out;
}

}  // namespace tandem::gpu_groupby
