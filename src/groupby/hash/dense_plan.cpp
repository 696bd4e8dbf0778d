#include "groupby/hash/dense_plan.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

#include <fmt/format.h>

namespace tandem::hash_groupby::dense {

namespace {
std::uint64_t round_up(std::uint64_t x, std::uint64_t a) { return (x + a - 1) / a * a; }
std::uint64_t ceil_div(std::uint64_t x, std::uint64_t d) { return x / d + (x % d != 0); }
}  // namespace

std::uint64_t key_range(std::uint64_t min, std::uint64_t max) { return max - min + 1; }

std::uint32_t block_slots(std::size_t shared_acc_bytes) {
  return std::bit_floor(static_cast<std::uint32_t>(kSharedBytes / std::max<std::size_t>(shared_acc_bytes, 1)));
}

bool range_fits(std::uint64_t range, std::uint64_t records, std::size_t shared_acc_bytes) {
  const std::uint64_t S = block_slots(shared_acc_bytes);
  if (range == 0 || range > S * kMaxPartitions) return false;
  return range <= S || range <= records * kRangePerRecord;
}

Plan plan(const Inputs& in) {
  Plan p;
  p.range = key_range(in.min, in.max);
  p.slots = block_slots(in.shared_acc_bytes);
  p.shift = static_cast<std::uint32_t>(std::countr_zero(p.slots));
  const std::uint64_t S = p.slots, R = p.range;
  if (in.records == 0) {
    p.why = "empty input";
    return p;
  }
  if (!range_fits(R, in.records, in.shared_acc_bytes)) {
    p.why = R == 0 || R > S * kMaxPartitions ? fmt::format("key range {} above {} partitions of {} slots",
                                                           R == 0 ? "2^64" : fmt::format("{}", R), kMaxPartitions, S)
                                             : fmt::format("key range {} wider than the {} records", R, in.records);
    return p;
  }
  p.table_bytes = R * in.acc_bytes;
  if (R > S) {
    p.partitions = static_cast<std::uint32_t>(ceil_div(R, S));
    // a full partition's share of evenly spread keys, with slack
    const double even = double(in.records) * double(S) / double(R);
    p.region = round_up(static_cast<std::uint64_t>(std::ceil(even * kRegionSlack)) + kRegionExtra, kRegionAlign);
    p.buffer_bytes = p.partitions * p.region * (sizeof(std::uint16_t) + in.value_bytes);
  }
  if (p.table_bytes + p.buffer_bytes > in.free_bytes) {
    p.why = fmt::format("{} bytes of dense table and partitions, {} free on the device", p.table_bytes + p.buffer_bytes,
                        in.free_bytes);
    return p;
  }
  p.use = true;
  return p;
}

std::uint64_t exact_region(std::uint64_t n) { return round_up(n, kRegionAlign); }

std::uint64_t reduce_chunk(std::uint64_t records, int target_blocks, std::uint32_t slots) {
  const std::uint64_t spread = ceil_div(records, std::uint64_t(std::max(target_blocks, 1)));
  return round_up(std::max<std::uint64_t>({spread, kMinChunkSlots * slots, 1}), kRegionAlign);
}

std::uint64_t reduce_blocks(std::uint64_t records, std::uint64_t chunk, std::uint32_t partitions) {
  return std::max<std::uint64_t>(ceil_div(records, chunk) + partitions, 1);
}

}  // namespace tandem::hash_groupby::dense
