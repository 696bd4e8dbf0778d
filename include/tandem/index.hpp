// tandem::index — thread-index generation without division.
//
//  * generator.hpp (host + device): index_of (div/mod), advance (the add-and-carry step),
//    FastDivmod / MagicIndexer (magic division), CarryPlan / CarryIter (N-D strided walker),
//    pack_layout / pack / unpack (bit-packed indices).
//  * this header (host): checked constructors, a walker, the warp-at-a-time generator, packed
//    tables, the cycle model of the generator's pipeline, the history cache, CPU reference kernels.
//  * device.hpp (CUDA only): grid-stride carry iterator and packed-table reader for kernels.
// Documentation: docs/index-generation.md.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tandem/core/error.hpp"
#include "tandem/index/generator.hpp"

namespace tandem::index {

// ---- checked constructors (UsageError on bad input) -----------------------------------------
// Extents must be >= 1; with limit32 the product must not exceed 2^32 (32-bit index mode).
Dims3 make_dims(std::uint64_t x, std::uint64_t y, std::uint64_t z, bool limit32 = true);
// "XxYxZ" (also "X" or "XxY", missing extents are 1); UsageError names what is wrong.
Dims3 parse_dims(std::string_view text, bool limit32 = true);
std::string to_string(Dims3 d);

// Step c >= 1 decomposed on d (c = 0 throws UsageError: the walk would never move).
template <class T = std::uint64_t>
Step3<T> make_step(std::uint64_t c, Dims3 d) {
  if (c == 0) throw UsageError("index step must be at least 1 (a step of 0 never advances)");
  if (d.count() == 0) throw UsageError("index dimensions must be at least 1");
  return {T(c), index_of<T>(T(c), d)};
}

// Divisor 1 <= d < 2^32 for magic division (UsageError otherwise).
FastDivmod make_divider(std::uint64_t d);

template <int N, class T = std::uint32_t, class Off = std::int64_t>
CarryPlan<N, T, Off> make_carry_plan(const std::array<T, N>& ext, const std::array<Off, N>& stride, std::uint64_t c) {
  if (c == 0) throw UsageError("index step must be at least 1 (a step of 0 never advances)");
  for (T e : ext)
    if (e == 0) throw UsageError("index extents must be at least 1");
  return carry_plan<N, T, Off>(ext.data(), stride.data(), c);
}

// Calls f(n, Index3<uint64_t>) for n = start, start + c, ... below d.count(), every index after
// the first from the previous one by advance() (no division in the loop). Returns the count.
template <class F>
std::uint64_t walk(Dims3 d, std::uint64_t c, std::uint64_t start, F&& f) {
  const auto s = make_step<std::uint64_t>(c, d);
  const std::uint64_t total = d.count();
  if (start >= total) return 0;
  Index3<std::uint64_t> i = index_of<std::uint64_t>(start, d);
  std::uint64_t n = start, count = 0;
  while (i.z < d.z) {
    f(n, i);
    ++count;
    i = advance(i, s.idx, d);
    n += c;
  }
  return count;
}

// ---- warp-at-a-time generation ------------------------------------------------------------
inline constexpr std::uint32_t kWarp = 32;

// Calls emit(warp, lanes, count) for warp = 0, 1, ...: 32 indices per step. Warp 0 is built by
// steps of 1 along the lanes; every later warp from the previous one by one step of 32 per lane
// (32 independent adders, as a hardware generator would). count < 32 only for the last warp.
template <class F>
std::uint64_t generate_warps(Dims3 d, F&& emit) {
  const std::uint64_t total = d.count();
  if (total == 0) return 0;
  if (total > (std::uint64_t(1) << 32))
    throw UsageError("warp generator works in 32-bit index mode (at most 2^32 indices)");
  const Index3<std::uint64_t> one = index_of<std::uint64_t>(1, d), step = index_of<std::uint64_t>(kWarp, d);
  Index3<std::uint64_t> wide[kWarp];
  Index3<std::uint32_t> lanes[kWarp];
  wide[0] = {};
  for (std::uint32_t l = 1; l < kWarp; ++l) wide[l] = advance(wide[l - 1], one, d);
  const std::uint64_t warps = (total + kWarp - 1) / kWarp;
  for (std::uint64_t w = 0; w < warps; ++w) {
    std::uint32_t count = 0;
    for (std::uint32_t l = 0; l < kWarp; ++l) {
      if (wide[l].z < d.z) {
        lanes[l] = {std::uint32_t(wide[l].x), std::uint32_t(wide[l].y), std::uint32_t(wide[l].z)};
        ++count;
      }
      wide[l] = advance(wide[l], step, d);
    }
    emit(w, static_cast<const Index3<std::uint32_t>*>(lanes), count);
  }
  return warps;
}

// ---- packed tables -------------------------------------------------------------------------
// One packed word per thread number, 16/32/64-bit words as pack_layout(dims) says.
struct PackedTable {
  Dims3 dims{};
  PackLayout layout{};
  std::vector<std::uint8_t> storage;  // count() words of layout.word_bits bits, little-endian

  std::uint64_t count() const { return dims.count(); }
  std::size_t memory_bytes() const { return storage.size(); }
  const void* data() const { return storage.data(); }
  std::uint64_t word(std::uint64_t n) const;
  Index3<std::uint32_t> index(std::uint64_t n) const { return unpack(word(n), layout); }
};

// Built by the warp generator (32-bit index mode).
PackedTable build_packed_table(Dims3 d);

// ---- cycle model of a one-warp-per-cycle index generator -------------------------------------
enum class GenMode { one_per_cycle, warp_per_cycle, all_at_once };
std::string_view to_string(GenMode m);

struct PipelineReport {
  GenMode mode{GenMode::warp_per_cycle};
  std::uint64_t threads{0}, warps{0};
  std::uint32_t instructions{0};       // kernel length; instruction i runs on core i
  std::uint64_t index_units{0};        // indices produced per cycle (hardware adders): 1, 32 or all
  std::uint64_t first_start{0};        // cycle at which warp 0 issues instruction 0 (the latency)
  std::uint64_t all_indices_ready{0};  // cycle at which every index of the block exists
  std::uint64_t total_cycles{0};       // cycles until the last warp retires its last instruction
  bool conflict_free{true};            // no core ran two warps in one cycle (checked by simulation)
};

// Simulates, cycle by cycle, index generation plus the incremental scheduler: warp w becomes
// ready when its 32 indices exist (one cycle after they are generated), issues instruction 0 on
// core 0 at the first cycle after it is ready and after warp w-1 issued, and instruction i on
// core i i cycles later. threads >= 1, instructions >= 1 (UsageError otherwise).
PipelineReport simulate_pipeline(std::uint64_t threads, std::uint32_t instructions, GenMode mode,
                                 std::uint32_t warp = kWarp);
// The pipeline as text: which (warp, instruction) each core runs in the first cycles.
std::string schedule_diagram(std::uint64_t threads, std::uint32_t instructions, GenMode mode, std::uint32_t cycles,
                             std::uint32_t warp = kWarp);

// ---- history cache ---------------------------------------------------------------------------
struct CacheOptions {
  std::size_t budget_bytes = std::size_t{64} << 20;  // memory for all stored tables together
  std::uint32_t dedicated_slots = 4;                 // addresses for frequently launched kernels
  std::uint32_t hot_after = 3;                       // launches before a kernel earns a slot
  // Below this budget every kernel shares one address ("with little memory, all share").
  std::size_t low_memory_bytes = std::size_t{1} << 20;
};

class HistoryCache {
 public:
  // Builds the stored object for a configuration and reports its size in bytes.
  using Factory = std::function<std::shared_ptr<const void>(Dims3, std::size_t& bytes)>;
  static constexpr std::uint64_t kSharedAddress = 0;

  struct Result {
    bool hit{false};
    bool stored{false};  // kept for later hits (false when it alone exceeds the budget)
    std::uint64_t address{0};
    std::shared_ptr<const void> payload;
    std::size_t bytes{0};
  };

  // Default factory: a host PackedTable from the warp generator.
  explicit HistoryCache(CacheOptions o = {}, Factory f = {});

  // The configuration filter: (address, dx, dy, dz) equal to what the address holds is a
  // hit (the stored table is reused); otherwise the table is generated into that address.
  Result lookup(std::uint64_t address, Dims3 d);
  // Policy: counts the kernel's launches; a kernel launched hot_after times gets a dedicated
  // address while slots and memory last; the others share kSharedAddress.
  Result request(const std::string& kernel, Dims3 d);

  std::uint64_t hits() const { return hits_; }
  std::uint64_t misses() const { return misses_; }
  std::size_t bytes_used() const;
  std::uint64_t launches(const std::string& kernel) const;
  // 0 when the kernel has no dedicated address.
  std::uint64_t dedicated_address(const std::string& kernel) const;
  std::size_t slots_in_use() const;  // addresses holding a table
  const CacheOptions& options() const { return opt_; }

  template <class P>
  static const P& as(const Result& r) {
    return *static_cast<const P*>(r.payload.get());
  }

 private:
  struct Slot {
    Dims3 dims{};
    std::shared_ptr<const void> payload;
    std::size_t bytes{0};
    std::uint64_t uses{0};
  };
  void make_room(std::uint64_t keep, std::size_t need);

  CacheOptions opt_;
  Factory factory_;
  std::map<std::uint64_t, Slot> slots_;
  std::map<std::string, std::uint64_t> counts_;
  std::map<std::string, std::uint64_t> dedicated_;
  std::uint64_t next_address_{1};
  std::uint64_t hits_{0}, misses_{0};
};

// ---- index methods and CPU reference kernels ------------------------------------------------
enum class Method { div, magic, carry, packed, plain3d };
std::string_view to_string(Method m);
Method parse_method(std::string_view name);  // UsageError on unknown names

// out[n] = in[x*s.x + y*s.y + z*s.z] for (x, y, z) = index of n in `dims` (a permute/gather of a
// strided tensor into a contiguous one). Every method gives the same bytes; `table` is needed for
// Method::packed (built for dims). plain3d loops over z, y, x. Uses OpenMP threads.
struct GatherSpec {
  Dims3 dims{};
  std::int64_t stride_x{1}, stride_y{1}, stride_z{1};
};
void gather_cpu(const float* in, float* out, const GatherSpec& s, Method m, const PackedTable* table = nullptr);

}  // namespace tandem::index
