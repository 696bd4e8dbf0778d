// Host side of tandem::index: checked constructors, packed tables, the cycle model, the history
// cache and the CPU reference gather.
#include "tandem/index.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>

#include <fmt/format.h>
#if defined(_OPENMP)
#include <omp.h>
#endif

namespace tandem::index {

Dims3 make_dims(std::uint64_t x, std::uint64_t y, std::uint64_t z, bool limit32) {
  if (x == 0 || y == 0 || z == 0)
    throw UsageError(fmt::format("index dimensions must be at least 1, got {}x{}x{}", x, y, z));
  constexpr std::uint64_t lim = std::uint64_t(1) << 32;
  if (x > 0xFFFFFFFFull || y > 0xFFFFFFFFull || z > 0xFFFFFFFFull)
    throw UsageError(fmt::format("each index dimension must be below 2^32, got {}x{}x{}", x, y, z));
  const unsigned __int128 p = (unsigned __int128)x * y * z;
  if (limit32 && p > lim)
    throw UsageError(fmt::format("{}x{}x{} has more than 2^32 elements: too many for 32-bit index mode", x, y, z));
  if (p > ~std::uint64_t(0)) throw UsageError(fmt::format("{}x{}x{} has more than 2^64 elements", x, y, z));
  return {std::uint32_t(x), std::uint32_t(y), std::uint32_t(z)};
}

Dims3 parse_dims(std::string_view text, bool limit32) {
  std::uint64_t v[3] = {1, 1, 1};
  int parts = 0;
  std::size_t pos = 0;
  auto bad = [&](const char* why) {
    return UsageError(fmt::format("malformed dimensions '{}': {} (expected XxYxZ, e.g. 64x32x8)", text, why));
  };
  if (text.empty()) throw bad("empty");
  while (true) {
    if (parts == 3) throw bad("more than three extents");
    const std::size_t end = std::min(text.find_first_of("xX", pos), text.size());
    const std::string_view part = text.substr(pos, end - pos);
    if (part.empty()) throw bad("an extent is missing");
    std::uint64_t value = 0;
    const auto r = std::from_chars(part.data(), part.data() + part.size(), value);
    if (r.ec == std::errc::result_out_of_range) throw bad("an extent is too large");
    if (r.ec != std::errc() || r.ptr != part.data() + part.size()) throw bad("extents must be whole numbers");
    v[parts++] = value;
    if (end == text.size()) break;
    pos = end + 1;
  }
  return make_dims(v[0], v[1], v[2], limit32);
}

std::string to_string(Dims3 d) { return fmt::format("{}x{}x{}", d.x, d.y, d.z); }

FastDivmod make_divider(std::uint64_t d) {
  if (d == 0) throw UsageError("divisor must be at least 1");
  if (d > 0xFFFFFFFFull) throw UsageError("divisor must be below 2^32 for 32-bit magic division");
  return FastDivmod(std::uint32_t(d));
}

// ---- packed tables ----------------------------------------------------------------------------
std::uint64_t PackedTable::word(std::uint64_t n) const {
  const std::size_t b = layout.word_bits / 8;
  std::uint64_t w = 0;
  std::memcpy(&w, storage.data() + n * b, b);  // little-endian host
  return w;
}

PackedTable build_packed_table(Dims3 d) {
  PackedTable t;
  t.dims = d;
  t.layout = pack_layout(d);
  const std::size_t b = t.layout.word_bits / 8;
  t.storage.assign(std::size_t(d.count()) * b, 0);
  std::uint8_t* out = t.storage.data();
  const PackLayout l = t.layout;
  generate_warps(d, [&](std::uint64_t w, const Index3<std::uint32_t>* lanes, std::uint32_t count) {
    for (std::uint32_t i = 0; i < count; ++i) {
      const std::uint64_t word = pack(lanes[i], l);
      std::memcpy(out + (w * kWarp + i) * b, &word, b);
    }
  });
  return t;
}

// ---- cycle model --------------------------------------------------------------------------------
std::string_view to_string(GenMode m) {
  switch (m) {
    case GenMode::one_per_cycle: return "one index per cycle";
    case GenMode::warp_per_cycle: return "one warp per cycle";
    case GenMode::all_at_once: return "all at once";
  }
  return "?";
}

namespace {
// Cycle at which warp w's indices are usable (the cycle after the last of them is generated).
std::uint64_t ready_cycle(GenMode m, std::uint64_t w, std::uint64_t threads, std::uint32_t warp) {
  switch (m) {
    case GenMode::one_per_cycle: return std::min(threads, (w + 1) * warp);  // index t made in cycle t
    case GenMode::warp_per_cycle: return w + 1;
    case GenMode::all_at_once: return 1;
  }
  return 0;
}
void check_model(std::uint64_t threads, std::uint32_t instructions, std::uint32_t warp) {
  if (threads == 0) throw UsageError("cycle model needs at least one thread");
  if (instructions == 0) throw UsageError("cycle model needs at least one instruction");
  if (warp == 0) throw UsageError("cycle model needs a warp size of at least 1");
}
}  // namespace

PipelineReport simulate_pipeline(std::uint64_t threads, std::uint32_t instructions, GenMode mode, std::uint32_t warp) {
  check_model(threads, instructions, warp);
  PipelineReport r;
  r.mode = mode;
  r.threads = threads;
  r.instructions = instructions;
  r.warps = (threads + warp - 1) / warp;
  r.index_units = mode == GenMode::one_per_cycle ? 1 : mode == GenMode::warp_per_cycle ? warp : threads;
  r.all_indices_ready = ready_cycle(mode, r.warps - 1, threads, warp);
  // Issue: warp w starts at max(ready_w, start_{w-1} + 1); instruction i of warp w runs on core i
  // at start_w + i. busy[i] remembers the last cycle core i was used, to prove no conflict.
  std::vector<std::uint64_t> busy(instructions, ~std::uint64_t(0));
  std::uint64_t start = 0;
  for (std::uint64_t w = 0; w < r.warps; ++w) {
    start = std::max(ready_cycle(mode, w, threads, warp), w == 0 ? 0 : start + 1);
    if (w == 0) r.first_start = start;
    for (std::uint32_t i = 0; i < instructions; ++i) {
      const std::uint64_t c = start + i;
      if (busy[i] != ~std::uint64_t(0) && busy[i] >= c) r.conflict_free = false;
      busy[i] = c;
    }
  }
  r.total_cycles = start + instructions;  // cycles 0 .. start_last + I - 1
  return r;
}

std::string schedule_diagram(std::uint64_t threads, std::uint32_t instructions, GenMode mode, std::uint32_t cycles,
                             std::uint32_t warp) {
  check_model(threads, instructions, warp);
  const std::uint64_t warps = (threads + warp - 1) / warp;
  std::vector<std::uint64_t> start(std::size_t(std::min<std::uint64_t>(warps, cycles + 1)));
  for (std::uint64_t w = 0; w < start.size(); ++w)
    start[w] = std::max(ready_cycle(mode, w, threads, warp), w == 0 ? 0 : start[w - 1] + 1);
  std::string s = fmt::format("{} ({} threads, {} warps, {} instructions); cell = warp.instruction\ncycle",
                              to_string(mode), threads, warps, instructions);
  const std::uint32_t cores = std::min<std::uint32_t>(instructions, 8);
  for (std::uint32_t i = 0; i < cores; ++i) s += fmt::format(" | core{:<3}", i);
  s += " | indices ready\n";
  for (std::uint32_t c = 0; c < cycles; ++c) {
    s += fmt::format("{:>5}", c);
    for (std::uint32_t i = 0; i < cores; ++i) {
      std::string cell = "-";
      for (std::uint64_t w = 0; w < start.size(); ++w)
        if (start[w] + i == c) cell = fmt::format("w{}.i{}", w, i);
      s += fmt::format(" | {:<7}", cell);
    }
    std::uint64_t ready = 0;
    for (std::uint64_t w = 0; w < warps && ready_cycle(mode, w, threads, warp) <= c; ++w) ++ready;
    s += fmt::format(" | {} warp(s)\n", ready);
  }
  return s;
}

// ---- history cache ------------------------------------------------------------------------------
HistoryCache::HistoryCache(CacheOptions o, Factory f) : opt_(o), factory_(std::move(f)) {
  if (!factory_)
    factory_ = [](Dims3 d, std::size_t& bytes) -> std::shared_ptr<const void> {
      auto t = std::make_shared<PackedTable>(build_packed_table(d));
      bytes = t->memory_bytes();
      return t;
    };
}

std::size_t HistoryCache::bytes_used() const {
  std::size_t b = 0;
  for (const auto& [a, s] : slots_) b += s.bytes;
  return b;
}

std::size_t HistoryCache::slots_in_use() const {
  std::size_t n = 0;
  for (const auto& [a, s] : slots_) n += s.payload != nullptr;
  return n;
}

std::uint64_t HistoryCache::launches(const std::string& kernel) const {
  auto it = counts_.find(kernel);
  return it == counts_.end() ? 0 : it->second;
}

std::uint64_t HistoryCache::dedicated_address(const std::string& kernel) const {
  auto it = dedicated_.find(kernel);
  return it == dedicated_.end() ? 0 : it->second;
}

void HistoryCache::make_room(std::uint64_t keep, std::size_t need) {
  // Evict the least used other slots until `need` more bytes fit in the budget.
  while (bytes_used() + need > opt_.budget_bytes) {
    auto victim = slots_.end();
    for (auto it = slots_.begin(); it != slots_.end(); ++it)
      if (it->first != keep && it->second.payload && (victim == slots_.end() || it->second.uses < victim->second.uses))
        victim = it;
    if (victim == slots_.end()) return;
    victim->second.payload.reset();
    victim->second.bytes = 0;
  }
}

HistoryCache::Result HistoryCache::lookup(std::uint64_t address, Dims3 d) {
  if (d.count() == 0) throw UsageError("index dimensions must be at least 1");
  Slot& s = slots_[address];
  if (s.payload && s.dims == d) {
    ++hits_;
    ++s.uses;
    return {true, true, address, s.payload, s.bytes};
  }
  ++misses_;
  std::size_t bytes = 0;
  auto payload = factory_(d, bytes);
  s.payload.reset();
  s.bytes = 0;
  if (bytes > opt_.budget_bytes) return {false, false, address, payload, bytes};  // too big to keep
  make_room(address, bytes);
  s.dims = d;
  s.payload = payload;
  s.bytes = bytes;
  ++s.uses;
  return {false, true, address, payload, bytes};
}

HistoryCache::Result HistoryCache::request(const std::string& kernel, Dims3 d) {
  const std::uint64_t launches = ++counts_[kernel];
  auto it = dedicated_.find(kernel);
  if (it != dedicated_.end()) return lookup(it->second, d);
  const bool rich = opt_.budget_bytes >= opt_.low_memory_bytes;
  if (rich && launches >= opt_.hot_after && dedicated_.size() < opt_.dedicated_slots) {
    const std::uint64_t a = next_address_++;
    dedicated_[kernel] = a;
    return lookup(a, d);
  }
  return lookup(kSharedAddress, d);
}

// ---- methods and the CPU reference gather -------------------------------------------------------
std::string_view to_string(Method m) {
  switch (m) {
    case Method::div: return "div";
    case Method::magic: return "magic";
    case Method::carry: return "carry";
    case Method::packed: return "packed";
    case Method::plain3d: return "plain3d";
  }
  return "?";
}

Method parse_method(std::string_view name) {
  for (Method m : {Method::div, Method::magic, Method::carry, Method::packed, Method::plain3d})
    if (to_string(m) == name) return m;
  throw UsageError(fmt::format("unknown index method '{}' (div, magic, carry, packed, plain3d)", name));
}

void gather_cpu(const float* in, float* out, const GatherSpec& s, Method m, const PackedTable* table) {
  const Dims3 d = s.dims;
  const std::int64_t total = std::int64_t(d.count());
  if (total == 0) return;
  if (m == Method::packed && (!table || !(table->dims == d)))
    throw UsageError("packed gather needs a packed table built for " + to_string(d));
  if (m != Method::div && m != Method::plain3d && d.count() > (std::uint64_t(1) << 32))
    throw UsageError("magic, carry and packed gathers work in 32-bit index mode");
  auto src = [&](std::uint64_t x, std::uint64_t y, std::uint64_t z) {
    return in[std::int64_t(x) * s.stride_x + std::int64_t(y) * s.stride_y + std::int64_t(z) * s.stride_z];
  };
  switch (m) {
    case Method::div:
#pragma omp parallel for schedule(static)
      for (std::int64_t n = 0; n < total; ++n) {
        const auto i = index_of<std::uint64_t>(std::uint64_t(n), d);
        out[n] = src(i.x, i.y, i.z);
      }
      break;
    case Method::magic: {
      const MagicIndexer mi(d);
#pragma omp parallel for schedule(static)
      for (std::int64_t n = 0; n < total; ++n) {
        const auto i = mi(std::uint32_t(n));
        out[n] = src(i.x, i.y, i.z);
      }
      break;
    }
    case Method::carry: {
      // Each thread takes a contiguous range: one division at its start, then steps of 1 that
      // carry the source offset along (CarryIter with the gather's strides).
      const std::array<std::uint32_t, 3> ext{d.x, d.y, d.z};
      const std::array<std::int64_t, 3> st{s.stride_x, s.stride_y, s.stride_z};
      const auto plan = make_carry_plan<3>(ext, st, 1);
#pragma omp parallel
      {
#if defined(_OPENMP)
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
#else
        const int t = 0, nt = 1;
#endif
        const std::int64_t a = total * t / nt, b = total * (t + 1) / nt;
        if (a < b) {
          auto it = CarryIter<3>::at(plan, std::uint64_t(a));
          for (std::int64_t n = a; n < b; ++n) {
            out[n] = in[it.off];
            it.advance(plan);
          }
        }
      }
      break;
    }
    case Method::packed:
#pragma omp parallel for schedule(static)
      for (std::int64_t n = 0; n < total; ++n) {
        const auto i = table->index(std::uint64_t(n));
        out[n] = src(i.x, i.y, i.z);
      }
      break;
    case Method::plain3d:
#pragma omp parallel for schedule(static)
      for (std::int64_t z = 0; z < std::int64_t(d.z); ++z)
        for (std::uint64_t y = 0; y < d.y; ++y) {
          const std::int64_t row = (z * std::int64_t(d.y) + std::int64_t(y)) * std::int64_t(d.x);
          for (std::uint64_t x = 0; x < d.x; ++x) out[row + std::int64_t(x)] = src(x, y, std::uint64_t(z));
        }
      break;
  }
}

}  // namespace tandem::index
