// Group ids from key columns. Each key column is first encoded on its own: every row gets a
// code that sorts as its key does (an integer's offset from the column's minimum when the range
// is small, else its rank among the column's distinct keys), a missing key the code after all
// others. Several columns combine into one number in mixed radix (code1 · card2 + code2 …),
// which also sorts as the key tuples do; when that number space is small it is the group id
// itself (a direct array index), otherwise its distinct values are ranked again. So ascending
// group ids are the output's key order and no result depends on a hash collision: hashes only
// place keys in tables, equality always compares the full key.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tandem/report.hpp"
#include "tandem/table.hpp"

namespace tandem::cpu_groupby {

// One key column's codes and how to turn codes back into keys.
class KeyColumn {
 public:
  virtual ~KeyColumn() = default;
  std::vector<std::uint32_t> codes;  // per row
  std::uint64_t card{0};             // codes are < card
  // The keys of the given codes, as a column named like the input.
  virtual Column decode(std::span<const std::uint32_t> codes, int threads) const = 0;
  virtual std::string how() const = 0;  // for the report
};

std::unique_ptr<KeyColumn> encode_key_column(const Column& c, int threads);

// Ranks of 64-bit keys (present rows only: rows[j] holds keys[j]); codes[rows[j]] = rank of
// keys[j]. Returns the distinct keys in ascending order. Hashes per thread when the keys repeat,
// sorts (key, row) pairs by radix when they are mostly distinct.
std::vector<std::uint64_t> rank_u64(std::vector<std::uint64_t> keys, const std::uint32_t* rows, std::uint32_t* codes,
                                    int threads, std::string* how = nullptr);

// The group id of every row and the keys of each group.
class GroupKeys {
 public:
  GroupKeys(const std::vector<const Column*>& keys, std::size_t rows, int threads, Report& report);
  const std::vector<std::uint32_t>& gid() const { return gid_; }
  std::uint64_t groups() const { return groups_; }  // group ids are < groups(); some may hold no row
  // The key columns of the given group ids, in that order.
  std::vector<Column> key_columns(std::span<const std::uint32_t> groups, int threads) const;

 private:
  void combine(std::size_t rows, int threads, Report& report);
  std::vector<std::unique_ptr<KeyColumn>> columns_;
  std::vector<std::vector<std::uint64_t>> ranked_before_;  // per column: the distinct combined keys ranked just before it joined
  std::vector<std::uint64_t> ranked_last_;                 // the distinct combined keys when they were ranked at the end
  std::vector<std::uint32_t> gid_;
  std::uint64_t groups_{1};
};

}  // namespace tandem::cpu_groupby
