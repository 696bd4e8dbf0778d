// The pure part of the distributed sort of keys in device memory, which sorts every key once:
// each rank counts its keys by a digit of their ordered bits (the bits just below the prefix that
// every key shares), the counts are summed over the ranks, and whole digit bins go to the ranks so
// that each gets close to N/P keys. After the exchange and each rank's local sort, a second, small
// exchange moves the keys that make rank d hold exactly the d-th slice [N*d/P, N*(d+1)/P) of the
// global order. No MPI and no device here: the CPU tests check it.
#pragma once
#include <algorithm>
#include <bit>
#include <cstdint>
#include <span>
#include <vector>

namespace tandem::dist::device_sort_plan {

// Bits [shift, shift + width) of a key's ordered bits.
struct BinDigit {
  int shift{0};
  int width{0};
  std::uint32_t bins() const { return std::uint32_t{1} << width; }
  template <class U>
  std::uint32_t operator()(U bits) const {
    return std::uint32_t(bits >> shift) & (bins() - 1);
  }
};

// The digit of at most max_width bits whose top bit is the highest bit where lo and hi, the
// smallest and largest ordered bits of all keys, differ. Every key between them shares the bits
// above it, so the digit is monotone in the key order. Width 0 (one bin) when lo == hi.
template <class U>
BinDigit bin_digit(U lo, U hi, int max_width) {
  const int top = static_cast<int>(std::bit_width(U(lo ^ hi)));
  const int width = std::min(max_width, top);
  return {top - width, width};
}

// The first global position of rank d's slice of n keys over p ranks.
inline std::uint64_t slice_start(std::uint64_t n, int d, int p) {
  return std::uint64_t((unsigned __int128)n * std::uint64_t(d) / std::uint64_t(p));
}

// Which bins each rank receives: p + 1 bin indices, rank d gets [first[d], first[d+1]). Each cut
// is the bin boundary nearest to the first position of the rank's slice (global_counts: keys of
// every rank per bin), so a rank is off its N/P by at most about one bin before the rebalance.
inline std::vector<std::uint32_t> bin_cuts(std::span<const std::uint64_t> global_counts, int p) {
  const auto bins = static_cast<std::uint32_t>(global_counts.size());
  std::vector<std::uint64_t> before(std::size_t(bins) + 1, 0);  // keys in the bins below each boundary
  for (std::uint32_t b = 0; b < bins; ++b) before[b + 1] = before[b] + global_counts[b];
  const std::uint64_t n = before[bins];
  std::vector<std::uint32_t> first(std::size_t(p) + 1, 0);
  first[std::size_t(p)] = bins;
  for (int d = 1; d < p; ++d) {
    const std::uint64_t target = slice_start(n, d, p);
    const std::uint32_t floor = first[std::size_t(d) - 1];
    auto c =
        static_cast<std::uint32_t>(std::lower_bound(before.begin() + floor, before.end(), target) - before.begin());
    if (c > floor && target - before[c - 1] < before[c] - target) --c;  // the nearer boundary
    first[std::size_t(d)] = c;
  }
  return first;
}

// How many of this rank's keys go to each rank: its bin counts summed over each rank's bins.
inline std::vector<std::uint64_t> keys_per_rank(std::span<const std::uint64_t> local_counts,
                                                std::span<const std::uint32_t> first) {
  std::vector<std::uint64_t> out(first.size() - 1, 0);
  for (std::size_t d = 0; d + 1 < first.size(); ++d)
    for (std::uint32_t b = first[d]; b < first[d + 1]; ++b) out[d] += local_counts[b];
  return out;
}

// The rebalance after the local sorts, when rank r holds held[r] sorted keys at the global
// positions that follow the ranks below it: how many of rank `from`'s keys go to each rank (its
// keys that lie in that rank's slice), and how many rank `to` receives from each rank. The
// pieces are in global order, so the received ones, back to back in rank order, are sorted.
inline std::uint64_t overlap(std::uint64_t a0, std::uint64_t a1, std::uint64_t b0, std::uint64_t b1) {
  const std::uint64_t lo = std::max(a0, b0), hi = std::min(a1, b1);
  return hi > lo ? hi - lo : 0;
}

struct Rebalance {
  std::vector<std::uint64_t> send;  // this rank's keys for each rank (itself included)
  std::vector<std::uint64_t> recv;  // keys from each rank
  bool moves{false};                // whether any rank sends a key to another
};

inline Rebalance rebalance(std::span<const std::uint64_t> held, int rank) {
  const int p = static_cast<int>(held.size());
  std::vector<std::uint64_t> at(std::size_t(p) + 1, 0);
  for (int r = 0; r < p; ++r) at[std::size_t(r) + 1] = at[std::size_t(r)] + held[std::size_t(r)];
  const std::uint64_t n = at[std::size_t(p)];
  Rebalance out{std::vector<std::uint64_t>(std::size_t(p)), std::vector<std::uint64_t>(std::size_t(p)), false};
  const std::uint64_t mine0 = slice_start(n, rank, p), mine1 = slice_start(n, rank + 1, p);
  for (int d = 0; d < p; ++d) {
    const std::uint64_t t0 = slice_start(n, d, p), t1 = slice_start(n, d + 1, p);
    out.send[std::size_t(d)] = overlap(at[std::size_t(rank)], at[std::size_t(rank) + 1], t0, t1);
    out.recv[std::size_t(d)] = overlap(at[std::size_t(d)], at[std::size_t(d) + 1], mine0, mine1);
    out.moves |= at[std::size_t(d)] != t0;  // every rank holds its slice exactly when all starts agree
  }
  return out;
}

}  // namespace tandem::dist::device_sort_plan
