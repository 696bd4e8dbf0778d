// Combining the key columns' codes into group ids (see cpu_keys.hpp).
#include <algorithm>

#include <fmt/format.h>

#include "groupby/cpu_keys.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/timing.hpp"

namespace tandem::cpu_groupby {
namespace {

constexpr std::size_t kFillRows = 2048;  // rows whose per-column codes fill() holds at once

// Combined code spaces up to this size index the state arrays directly (some ids may be empty).
std::uint64_t direct_limit(std::size_t rows) {
  return std::min<std::uint64_t>(std::max<std::uint64_t>(std::uint64_t{1} << 16, 2 * std::uint64_t{rows}),
                                 std::uint64_t{1} << 31);
}

}  // namespace

GroupKeys::GroupKeys(const std::vector<const Column*>& keys, std::size_t rows, int threads, Report& report,
                     std::uint64_t guessed_ids_at_most) {
  const bool guess_ranges = guessed_ids_at_most > 0;
  if (rows >= UINT32_MAX)
    throw InputError(fmt::format("group-by of {} rows: at most 2^32 - 2 rows are supported", rows));
  Stopwatch w;
  for (const Column* c : keys) columns_.push_back(encode_key_column(*c, threads, guess_ranges));
  std::uint64_t product = 1;
  bool fits = true;
  const auto multiply = [&] {
    product = 1;
    fits = true;
    for (const auto& c : columns_) fits = fits && !__builtin_mul_overflow(product, c->card, &product);
  };
  multiply();
  // Ranking the combined codes reads every code at once: guessed ranges only serve direct ids,
  // and only as many as the caller allows.
  if (guess_ranges && !(fits && product <= std::min(direct_limit(rows), guessed_ids_at_most))) {
    for (std::size_t c = 0; c < keys.size(); ++c)
      if (columns_[c]->guessed()) columns_[c] = encode_key_column(*keys[c], threads);
    multiply();
  }
  for (std::size_t c = 0; c < keys.size(); ++c)
    report.note(fmt::format("key '{}' ({}): {}", keys[c]->name, to_string(keys[c]->type), columns_[c]->how()));
  if (!keys.empty())
    report.add("encode keys", "cpu", w.seconds(), fmt::format("{} column(s), {} rows", keys.size(), rows));
  ranked_before_.assign(keys.size(), {});
  if (fits && product <= direct_limit(rows)) {
    groups_ = product;
    if (keys.size() > 1) report.note(fmt::format("{} combined key codes index the groups directly", product));
    return;
  }
  rank_combined(rows, threads, report);
}

bool GroupKeys::missed() const {
  return std::any_of(columns_.begin(), columns_.end(), [](const auto& c) { return c->missed(); });
}

void GroupKeys::fill(std::size_t begin, std::size_t end, std::uint32_t* out) const {
  if (ranked_) return gid_.codes(begin, end, out);
  if (columns_.empty()) return std::fill(out, out + (end - begin), 0u);
  columns_[0]->codes(begin, end, out);
  std::uint32_t code[kFillRows];
  for (std::size_t c = 1; c < columns_.size(); ++c) {
    const auto card = static_cast<std::uint32_t>(columns_[c]->card);
    for (std::size_t b = begin; b < end; b += kFillRows) {
      const std::size_t e = std::min(end, b + kFillRows);
      columns_[c]->codes(b, e, code);
      for (std::size_t i = b; i < e; ++i) out[i - begin] = out[i - begin] * card + code[i - b];
    }
  }
}

// The combined codes do not fit a direct index: build them in 64 bits, ranking them on the way
// whenever the next column would overflow 64 bits, and rank the result.
void GroupKeys::rank_combined(std::size_t rows, int threads, Report& report) {
  Stopwatch w;
  const std::size_t k = columns_.size();
  Scratch<std::uint64_t> acc(rows);
  std::uint64_t card = 1;
  for (std::size_t c = 0; c < k;) {
    std::size_t e = c;
    std::uint64_t product = card;
    while (e < k && !__builtin_mul_overflow(product, columns_[e]->card, &product)) ++e;
    if (e == c) {  // the codes so far times the next card would overflow: rank them first
      auto r = rank_u64(acc.data(), nullptr, rows, threads);
      ranked_before_[c] = std::move(r.sorted);
      card = ranked_before_[c].size();
#pragma omp parallel for num_threads(threads) schedule(static)
      for (std::size_t b = 0; b < rows; b += kFillRows) {
        std::uint32_t code[kFillRows];
        r.codes.codes(b, std::min(rows, b + kFillRows), code);
        for (std::size_t i = b; i < std::min(rows, b + kFillRows); ++i) acc[i] = code[i - b];
      }
      continue;
    }
#pragma omp parallel for num_threads(threads) schedule(static)
    for (std::size_t b = 0; b < rows; b += kFillRows) {
      const std::size_t end = std::min(rows, b + kFillRows);
      std::uint32_t code[kFillRows];
      for (std::size_t j = c; j < e; ++j) {
        columns_[j]->codes(b, end, code);
        for (std::size_t i = b; i < end; ++i) acc[i] = (j == 0 ? 0 : acc[i] * columns_[j]->card) + code[i - b];
      }
    }
    card = product;
    c = e;
  }
  auto r = rank_u64(acc.data(), nullptr, rows, threads);
  gid_ = std::move(r.codes);
  ranked_last_ = std::move(r.sorted);
  ranked_ = true;
  groups_ = ranked_last_.size();
  report.add("combine keys", "cpu", w.seconds(),
             fmt::format("{} of {} combined codes occur, {}", groups_, card, r.how));
}

std::vector<Column> GroupKeys::key_columns(std::span<const std::uint32_t> groups, int threads) const {
  const std::size_t k = columns_.size(), m = groups.size();
  std::vector<Scratch<std::uint32_t>> codes(k);
  for (auto& c : codes) c.resize(m);
#pragma omp parallel for num_threads(m < 65536 ? 1 : threads) schedule(static)
  for (std::size_t i = 0; i < m; ++i) {
    std::uint64_t v = ranked_ ? ranked_last_[groups[i]] : groups[i];
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
