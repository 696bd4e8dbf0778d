// Combining the key columns' codes into group ids (see cpu_keys.hpp).
#include <fmt/format.h>

#include "groupby/cpu_keys.hpp"
#include "tandem/error.hpp"
#include "tandem/timing.hpp"

namespace tandem::cpu_groupby {
namespace {

// Combined code spaces up to this size index the state arrays directly (some ids may be empty).
std::uint64_t direct_limit(std::size_t rows) {
  return std::min<std::uint64_t>(std::max<std::uint64_t>(std::uint64_t{1} << 16, 2 * std::uint64_t{rows}),
                                 std::uint64_t{1} << 31);
}

}  // namespace

GroupKeys::GroupKeys(const std::vector<const Column*>& keys, std::size_t rows, int threads, Report& report) {
  if (rows >= UINT32_MAX) throw InputError(fmt::format("group-by of {} rows: at most 2^32 - 2 rows are supported", rows));
  Stopwatch w;
  for (const Column* c : keys) {
    columns_.push_back(encode_key_column(*c, threads));
    report.note(fmt::format("key '{}' ({}): {}", c->name, to_string(c->type), columns_.back()->how()));
  }
  if (!keys.empty()) report.add("encode keys", "cpu", w.seconds(), fmt::format("{} column(s), {} rows", keys.size(), rows));
  combine(rows, threads, report);
}

void GroupKeys::combine(std::size_t rows, int threads, Report& report) {
  const std::size_t k = columns_.size();
  ranked_before_.assign(k, {});
  if (k <= 1) {
    if (k == 0) gid_.assign(rows, 0);
    else gid_ = std::move(columns_[0]->codes);
    groups_ = k == 0 ? 1 : columns_[0]->card;
    return;
  }
  Stopwatch w;
  std::vector<std::uint64_t> acc(rows);
  std::uint64_t card = 1;
  for (std::size_t c = 0; c < k;) {
    std::size_t e = c;
    std::uint64_t product = card;
    while (e < k && !__builtin_mul_overflow(product, columns_[e]->card, &product)) ++e;
    if (e == c) {  // the combined codes so far times the next card would overflow: rank them first
      std::vector<std::uint32_t> ranks(rows);
      ranked_before_[c] = rank_u64(acc, nullptr, ranks.data(), threads);
      card = ranked_before_[c].size();
#pragma omp parallel for num_threads(threads) schedule(static)
      for (std::size_t i = 0; i < rows; ++i) acc[i] = ranks[i];
      continue;
    }
    const bool first = c == 0;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (std::size_t i = 0; i < rows; ++i) {
      std::uint64_t v = first ? 0 : acc[i];
      for (std::size_t j = c; j < e; ++j) v = v * columns_[j]->card + columns_[j]->codes[i];
      acc[i] = v;
    }
    for (std::size_t j = c; j < e; ++j) std::vector<std::uint32_t>().swap(columns_[j]->codes);
    card = product;
    c = e;
  }
  gid_.resize(rows);
  if (card <= direct_limit(rows)) {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (std::size_t i = 0; i < rows; ++i) gid_[i] = static_cast<std::uint32_t>(acc[i]);
    groups_ = card;
    report.add("combine keys", "cpu", w.seconds(), fmt::format("{} combined codes index the groups directly", card));
    return;
  }
  std::string how;
  ranked_last_ = rank_u64(std::move(acc), nullptr, gid_.data(), threads, &how);
  groups_ = ranked_last_.size();
  report.add("combine keys", "cpu", w.seconds(), fmt::format("{} of {} combined codes occur, {}", groups_, card, how));
}

std::vector<Column> GroupKeys::key_columns(std::span<const std::uint32_t> groups, int threads) const {
  const std::size_t k = columns_.size(), m = groups.size();
  std::vector<std::vector<std::uint32_t>> codes(k, std::vector<std::uint32_t>(m));
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::size_t i = 0; i < m; ++i) {
    std::uint64_t v = ranked_last_.empty() ? groups[i] : ranked_last_[groups[i]];
    for (std::size_t c = k; c-- > 1;) {
      codes[c][i] = static_cast<std::uint32_t>(v % columns_[c]->card);
      v /= columns_[c]->card;
      if (!ranked_before_[c].empty()) v = ranked_before_[c][v];
    }
    if (k > 0) codes[0][i] = static_cast<std::uint32_t>(v);
  }
  std::vector<Column> out;
  for (std::size_t c = 0; c < k; ++c) out.push_back(columns_[c]->decode(codes[c], threads));
  return out;
}

}  // namespace tandem::cpu_groupby
