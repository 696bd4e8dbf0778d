// The passes of string_ranks.hpp: distinct strings by a hash table, their order by radix passes
// over 8-byte words, then every row's rank and the sorted strings for the host.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <bit>

#include "table/gpu/string_ranks.hpp"
#include "tandem/core/hash.hpp"
#include "tandem/cuda/buffers.hpp"
#include "tandem/cuda/cub_call.hpp"
#include "tandem/cuda/launch.hpp"
#include "tandem/cuda/runtime.hpp"
#include "tandem/cuda/sequence.hpp"

namespace tandem::table_gpu {
namespace {

using u64 = unsigned long long;  // the type CUDA's 64-bit atomics take

constexpr unsigned kBlock = 256;
// At most kMaxBlocks · kBlock rows are in flight: a first table that overflows (see
// insert_rows) can take that many strings past its limit and still has empty slots.
constexpr unsigned kMaxBlocks = 2048;
constexpr u64 kEmptySlot = ~u64{0};
constexpr std::uint32_t kNoSlot = ~std::uint32_t{0};
// The first table's slots for a large column (16 MiB, within the L2 cache): columns with fewer
// than half as many distinct strings never need the full-size table.
constexpr std::size_t kFirstTableSlots = std::size_t{1} << 21;

unsigned blocks(std::size_t items) { return gpu::grid_for(items, kBlock, kMaxBlocks); }

__device__ bool is_present(const std::uint8_t* v, std::size_t i) {
  return v == nullptr || ((v[i >> 3] >> (i & 7)) & 1u);
}

__device__ bool same_bytes(const char* a, const char* b, std::uint64_t n) {
  for (std::uint64_t j = 0; j < n; ++j)
    if (a[j] != b[j]) return false;
  return true;
}

// Puts every present row's string in the table (slot: 32 bits of its hash | its first row) and
// writes each row's slot (kNoSlot: missing). Past `limit` distinct strings it sets *overflow and
// the rows still running stop: the caller then retries with a larger table.
__global__ void insert_rows(DeviceStrings s, u64* table, std::uint64_t mask, std::uint32_t* slot_of_row, u64* used,
                            std::uint64_t limit, int* overflow) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < s.rows; i += stride) {
    if (!is_present(s.validity, i)) {
      slot_of_row[i] = kNoSlot;
      continue;
    }
    const std::uint64_t begin = s.offsets[i], len = s.offsets[i + 1] - begin;
    const char* p = s.bytes + begin;
    const std::uint64_t h = hash_bytes(p, len);
    const u64 tag = h & 0xffffffff00000000ull;
    std::uint64_t slot = h & mask;
    for (;;) {
      u64 cur = *reinterpret_cast<volatile u64*>(table + slot);
      if (cur == kEmptySlot) {
        if (*reinterpret_cast<volatile int*>(overflow)) return;
        cur = atomicCAS(table + slot, kEmptySlot, tag | i);
        if (cur == kEmptySlot) {
          if (atomicAdd(used, u64{1}) >= limit) atomicExch(overflow, 1);
          slot_of_row[i] = static_cast<std::uint32_t>(slot);
          break;
        }
      }
      if ((cur & 0xffffffff00000000ull) == tag) {
        const std::uint64_t r = cur & 0xffffffffull, rb = s.offsets[r];
        if (s.offsets[r + 1] - rb == len && same_bytes(s.bytes + rb, p, len)) {
          slot_of_row[i] = static_cast<std::uint32_t>(slot);
          break;
        }
      }
      slot = (slot + 1) & mask;
    }
  }
}

// Numbers the used slots 0..distinct-1 (a warp takes its numbers with one atomic): the slot's
// first row goes to first_row[number] and the slot then holds its number.
__global__ void number_slots(u64* table, std::uint64_t slots, std::uint32_t* first_row, u64* count) {
  const unsigned lane = threadIdx.x & 31u;
  const std::uint64_t stride = std::uint64_t(gridDim.x) * blockDim.x;
  for (std::uint64_t base = blockIdx.x * std::uint64_t(blockDim.x) + (threadIdx.x - lane); base < slots;
       base += stride) {
    const std::uint64_t s = base + lane;
    const bool used = s < slots && table[s] != kEmptySlot;
    const unsigned ballot = __ballot_sync(0xffffffffu, used);
    if (ballot == 0) continue;
    const int leader = __ffs(ballot) - 1;
    u64 first = 0;
    if (static_cast<int>(lane) == leader) first = atomicAdd(count, static_cast<u64>(__popc(ballot)));
    first = __shfl_sync(0xffffffffu, first, leader);
    if (used) {
      const u64 number = first + __popc(ballot & ((1u << lane) - 1u));
      first_row[number] = static_cast<std::uint32_t>(table[s] & 0xffffffffull);
      table[s] = number;
    }
  }
}

// The longest distinct string, and whether any holds a NUL byte (then equal padded words do
// not make equal strings, and the length breaks the tie).
__global__ void measure_distinct(DeviceStrings s, const std::uint32_t* first_row, std::size_t distinct, u64* longest,
                                 int* has_nul) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t k = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; k < distinct; k += stride) {
    const std::uint64_t b = s.offsets[first_row[k]], len = s.offsets[first_row[k] + 1] - b;
    atomicMax(longest, static_cast<u64>(len));
    for (std::uint64_t j = 0; j < len; ++j)
      if (s.bytes[b + j] == 0) {
        atomicExch(has_nul, 1);
        break;
      }
  }
}

// Sort keys of the distinct strings in their current order: the big-endian 8-byte word `word`
// (zero past the end), or the length.
__global__ void word_keys(DeviceStrings s, const std::uint32_t* first_row, const std::uint32_t* order,
                          std::size_t distinct, std::uint64_t word, bool by_length, std::uint64_t* keys) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t k = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; k < distinct; k += stride) {
    const std::uint32_t r = first_row[order[k]];
    const std::uint64_t b = s.offsets[r], len = s.offsets[r + 1] - b;
    if (by_length) {
      keys[k] = len;
      continue;
    }
    std::uint64_t key = 0;
    for (unsigned j = 0; j < 8; ++j) {
      const std::uint64_t at = 8 * word + j;
      key = (key << 8) | (at < len ? static_cast<unsigned char>(s.bytes[b + at]) : 0u);
    }
    keys[k] = key;
  }
}

__global__ void invert(const std::uint32_t* order, std::size_t distinct, std::uint32_t* rank) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t k = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; k < distinct; k += stride)
    rank[order[k]] = static_cast<std::uint32_t>(k);
}

// In place: a row's slot becomes its string's rank (kNoSlot: `missing_code`).
__global__ void row_codes(std::uint32_t* slot_codes, std::size_t rows, const u64* table, const std::uint32_t* rank,
                          std::uint32_t missing_code) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < rows; i += stride) {
    const std::uint32_t slot = slot_codes[i];
    slot_codes[i] = slot == kNoSlot ? missing_code : rank[table[slot]];
  }
}

__global__ void sorted_lengths(DeviceStrings s, const std::uint32_t* first_row, const std::uint32_t* order,
                               std::size_t distinct, std::uint64_t* lengths) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t k = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; k <= distinct; k += stride) {
    if (k == distinct) {
      lengths[k] = 0;
      continue;
    }
    const std::uint32_t r = first_row[order[k]];
    lengths[k] = s.offsets[r + 1] - s.offsets[r];
  }
}

__global__ void copy_sorted(DeviceStrings s, const std::uint32_t* first_row, const std::uint32_t* order,
                            std::size_t distinct, const std::uint64_t* out_offsets, char* out) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t k = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; k < distinct; k += stride) {
    const std::uint32_t r = first_row[order[k]];
    const std::uint64_t b = s.offsets[r], len = s.offsets[r + 1] - b;
    for (std::uint64_t j = 0; j < len; ++j) out[out_offsets[k] + j] = s.bytes[b + j];
  }
}

// The hash table after every present row is in it; slot_of_row filled.
struct Distinct {
  gpu::DeviceBuffer<u64> table;
  std::size_t count{0};
};

Distinct find_distinct(const DeviceStrings& s, std::uint32_t* slot_of_row, cudaStream_t stream) {
  const std::size_t full = std::bit_ceil(std::max<std::size_t>(2 * s.rows, 1024));
  std::size_t slots = std::min(full, kFirstTableSlots);
  gpu::DeviceBuffer<u64> counters(2);  // distinct strings; overflow flag
  for (;;) {
    Distinct d{gpu::DeviceBuffer<u64>(slots), 0};
    d.table.poison(stream);  // every slot empty
    TANDEM_CUDA(cudaMemsetAsync(counters.data(), 0, counters.bytes(), stream));
    // A table of 2 · rows slots or more cannot fill: no limit.
    const std::uint64_t limit = slots == full ? ~std::uint64_t{0} : slots / 2;
    insert_rows<<<blocks(s.rows), kBlock, 0, stream>>>(s, d.table.data(), slots - 1, slot_of_row, counters.data(),
                                                       limit, reinterpret_cast<int*>(counters.data() + 1));
    TANDEM_CUDA(cudaGetLastError());
    const u64 overflow = gpu::read_value(counters.data() + 1, stream);
    if (overflow == 0) {
      d.count = gpu::read_value(counters.data(), stream);
      return d;
    }
    slots = full;
  }
}

// The distinct strings' order: first_row indices sorted by their strings.
gpu::DeviceBuffer<std::uint32_t> sort_distinct(const DeviceStrings& s, const std::uint32_t* first_row,
                                               std::size_t distinct, cudaStream_t stream) {
  gpu::DeviceBuffer<u64> stats(2);  // longest; has NUL
  TANDEM_CUDA(cudaMemsetAsync(stats.data(), 0, stats.bytes(), stream));
  measure_distinct<<<blocks(distinct), kBlock, 0, stream>>>(s, first_row, distinct, stats.data(),
                                                            reinterpret_cast<int*>(stats.data() + 1));
  TANDEM_CUDA(cudaGetLastError());
  const u64 longest = gpu::read_value(stats.data(), stream);
  const bool has_nul = gpu::read_value(stats.data() + 1, stream) != 0;

  gpu::DeviceBuffer<std::uint32_t> order_a(distinct), order_b(distinct);
  gpu::iota_u32(order_a.data(), distinct, stream);
  gpu::DeviceBuffer<std::uint64_t> keys_a(distinct), keys_b(distinct);
  cub::DoubleBuffer<std::uint64_t> keys(keys_a.data(), keys_b.data());
  cub::DoubleBuffer<std::uint32_t> order(order_a.data(), order_b.data());
  const auto pass = [&](std::uint64_t word, bool by_length, int end_bit) {
    word_keys<<<blocks(distinct), kBlock, 0, stream>>>(s, first_row, order.Current(), distinct, word, by_length,
                                                       keys.Current());
    TANDEM_CUDA(cudaGetLastError());
    gpu::run_cub("string ranks: radix sort", [&](void* temp, std::size_t& bytes) {
      return cub::DeviceRadixSort::SortPairs(temp, bytes, keys, order, distinct, 0, end_bit, stream);
    });
  };
  // Least significant first, each pass stable: the length (only where NULs make it matter),
  // then the words from the last to the first.
  if (has_nul) pass(0, true, std::max(1, static_cast<int>(std::bit_width(longest))));
  for (std::uint64_t w = (longest + 7) / 8; w-- > 0;) pass(w, false, 64);
  if (order.Current() == order_a.data()) return order_a;
  return order_b;
}

SortedStrings download_sorted(const DeviceStrings& s, const std::uint32_t* first_row, const std::uint32_t* order,
                              std::size_t distinct, cudaStream_t stream) {
  gpu::DeviceBuffer<std::uint64_t> offsets(distinct + 1);
  sorted_lengths<<<blocks(distinct + 1), kBlock, 0, stream>>>(s, first_row, order, distinct, offsets.data());
  TANDEM_CUDA(cudaGetLastError());
  gpu::run_cub("string ranks: offsets", [&](void* temp, std::size_t& bytes) {
    return cub::DeviceScan::ExclusiveSum(temp, bytes, offsets.data(), offsets.data(), distinct + 1, stream);
  });
  SortedStrings out;
  out.offsets.resize(distinct + 1);
  TANDEM_CUDA(cudaMemcpyAsync(out.offsets.data(), offsets.data(), offsets.bytes(), cudaMemcpyDeviceToHost, stream));
  TANDEM_CUDA(cudaStreamSynchronize(stream));
  const std::size_t total = out.offsets.back();
  gpu::DeviceBuffer<char> bytes(total);
  if (total > 0) {
    copy_sorted<<<blocks(distinct), kBlock, 0, stream>>>(s, first_row, order, distinct, offsets.data(), bytes.data());
    TANDEM_CUDA(cudaGetLastError());
    out.bytes.resize(total);
    TANDEM_CUDA(cudaMemcpyAsync(out.bytes.data(), bytes.data(), total, cudaMemcpyDeviceToHost, stream));
    TANDEM_CUDA(cudaStreamSynchronize(stream));
  }
  return out;
}

}  // namespace

std::optional<SortedStrings> rank_strings(const DeviceStrings& s, std::uint32_t* codes, cudaStream_t stream) {
  if (s.rows > kMaxRankedRows) return std::nullopt;
  if (s.rows == 0) return SortedStrings{};
  Distinct d = find_distinct(s, codes, stream);
  gpu::DeviceBuffer<std::uint32_t> first_row(std::max<std::size_t>(d.count, 1));
  gpu::DeviceBuffer<u64> count(1);
  TANDEM_CUDA(cudaMemsetAsync(count.data(), 0, count.bytes(), stream));
  number_slots<<<blocks(d.table.size()), kBlock, 0, stream>>>(d.table.data(), d.table.size(), first_row.data(),
                                                              count.data());
  TANDEM_CUDA(cudaGetLastError());
  gpu::DeviceBuffer<std::uint32_t> rank(std::max<std::size_t>(d.count, 1));
  gpu::DeviceBuffer<std::uint32_t> order;
  if (d.count > 0) {
    order = sort_distinct(s, first_row.data(), d.count, stream);
    invert<<<blocks(d.count), kBlock, 0, stream>>>(order.data(), d.count, rank.data());
    TANDEM_CUDA(cudaGetLastError());
  }
  row_codes<<<blocks(s.rows), kBlock, 0, stream>>>(codes, s.rows, d.table.data(), rank.data(),
                                                   static_cast<std::uint32_t>(d.count));
  TANDEM_CUDA(cudaGetLastError());
  SortedStrings sorted;
  if (d.count > 0) sorted = download_sorted(s, first_row.data(), order.data(), d.count, stream);
  TANDEM_CUDA(cudaStreamSynchronize(stream));
  return sorted;
}

}  // namespace tandem::table_gpu
