// The parallel gather behind the table sort: one pass per column over the row order.
#include <cstring>
#include <exception>

#include "row_order.hpp"
#include "tandem/core/gather.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/core/uninit_allocator.hpp"

namespace tandem::detail {
namespace {

template <class T>
using Uninit = std::vector<T, UninitAllocator<T>>;

// The validity of the gathered rows, a byte (8 rows) at a time so that threads never share one.
Buffer gather_validity(const Column& c, std::span<const std::size_t> rows, int T) {
  const std::size_t bytes = (rows.size() + 7) / 8;
  Uninit<std::uint8_t> bits(bytes);
#pragma omp parallel for num_threads(T) schedule(static)
  for (std::size_t b = 0; b < bytes; ++b) {
    std::uint8_t v = 0;
    for (std::size_t i = b * 8; i < std::min(rows.size(), b * 8 + 8); ++i)
      if (c.present(rows[i])) v |= static_cast<std::uint8_t>(1u << (i & 7));
    bits[b] = v;
  }
  return Buffer::take(std::move(bits));
}

// Rows ahead whose values are prefetched: the row order is random, so the hardware cannot guess
// the next address; some tens of misses in flight per core keep the memory busy.
constexpr std::size_t kAhead = 16;

template <class T>
Buffer gather_numbers(const Column& c, std::span<const std::size_t> rows, int threads) {
  Uninit<T> out(rows.size());
  gather_prefetched(c.numbers<T>().data(), rows.data(), rows.size(), out.data(), threads);
  return Buffer::take(std::move(out));
}

// Each row's source offset and length read once (the one random read of the offsets), then the
// output offsets by a parallel prefix sum over T shares of the rows, then the bytes copied.
void gather_strings(const Column& c, std::span<const std::size_t> rows, int T, Column& out) {
  const std::size_t n = rows.size();
  const auto in_off = c.string_offsets();
  Uninit<std::uint64_t> from(n), off(n + 1);
  std::vector<std::uint64_t> share_bytes(static_cast<std::size_t>(T) + 1, 0);
#pragma omp parallel num_threads(T)
  {
#pragma omp for schedule(static)
    for (int t = 0; t < T; ++t) {
      std::uint64_t sum = 0;
      const std::size_t end = n * (t + 1) / T;
      for (std::size_t i = n * t / T; i < end; ++i) {
        if (i + kAhead < end) __builtin_prefetch(in_off.data() + rows[i + kAhead]);
        from[i] = in_off[rows[i]];
        off[i] = in_off[rows[i] + 1] - from[i];  // the length, for now
        sum += off[i];
      }
      share_bytes[static_cast<std::size_t>(t) + 1] = sum;
    }
#pragma omp single
    for (int t = 0; t < T; ++t) share_bytes[t + 1] += share_bytes[t];
#pragma omp for schedule(static)
    for (int t = 0; t < T; ++t) {
      std::uint64_t at = share_bytes[static_cast<std::size_t>(t)];
      for (std::size_t i = n * t / T; i < n * (t + 1) / T; ++i) {
        const std::uint64_t length = off[i];
        off[i] = at;
        at += length;
      }
    }
  }
  off[n] = share_bytes.back();
  Uninit<char> bytes(off[n]);
  const auto* src = reinterpret_cast<const char*>(c.values.data());
#pragma omp parallel for num_threads(T) schedule(static)
  for (std::size_t i = 0; i < n; ++i) {
    if (i + kAhead < n) __builtin_prefetch(src + from[i + kAhead]);
    if (off[i + 1] > off[i]) std::memcpy(bytes.data() + off[i], src + from[i], off[i + 1] - off[i]);
  }
  out.values = Buffer::take(std::move(bytes));
  out.offsets = Buffer::take(std::move(off));
}

}  // namespace

Table gather_rows(const Table& table, std::span<const std::size_t> rows, int threads) {
  const int T = threads > 0 ? threads : default_threads();
  Table result;
  for (const Column& c : table.columns()) {
    Column g;
    g.name = c.name;
    g.type = c.type;
    g.length = rows.size();
    if (!c.validity.empty()) g.validity = gather_validity(c, rows, T);
    if (c.type == ColumnType::str) gather_strings(c, rows, T, g);
    else g.values = visit_numeric(c.type, [&](auto t) { return gather_numbers<decltype(t)>(c, rows, T); });
    result.add(std::move(g));
  }
  return result;
}

}  // namespace tandem::detail
