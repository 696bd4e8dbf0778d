// Group ids from key columns. Each key column is first encoded on its own: every row gets a
// code that sorts as its key does (an integer's offset from the column's minimum when the range
// is small, else its rank among the column's distinct keys), a missing key the code after all
// others. Several columns combine into one number in mixed radix (code1 · card2 + code2 …),
// which also sorts as the key tuples do; when that number space is small it is the group id
// itself (a direct array index, computed block by block as the rows are read), otherwise its
// distinct values are ranked again. So ascending group ids are the output's key order, and no
// result depends on a hash collision: hashes only place keys in tables, equality always
// compares the full key.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "groupby/cpu_dictionary.hpp"
#include "tandem/core/report.hpp"
#include "tandem/table.hpp"

namespace tandem::cpu_groupby {

// How to turn one key column's codes back into keys (what a device column's codes need: the
// codes themselves may live elsewhere).
class KeyDecoder {
 public:
  virtual ~KeyDecoder() = default;
  std::uint64_t card{0};  // codes are < card
  // The keys of the given codes, as a column named like the input.
  virtual Column decode(std::span<const std::uint32_t> codes, int threads) const = 0;
  virtual std::string how() const = 0;  // for the report
};

// One key column's codes and how to turn codes back into keys.
class KeyColumn : public KeyDecoder {
 public:
  // The codes of rows [begin, end) into out[0, end - begin).
  virtual void codes(std::size_t begin, std::size_t end, std::uint32_t* out) const = 0;
  // Whether codes() met a key outside a range guessed from a sample: codes given since may be
  // wrong, and the column has to be encoded again without guessing.
  virtual bool missed() const { return false; }
  virtual bool guessed() const { return false; }  // its range came from a sample
};

// guess_range: a large integer column's range may come from a sample of its values, saving a
// pass over the column; its codes() then watch for keys outside it (missed()).
std::unique_ptr<KeyColumn> encode_key_column(const Column& c, int threads, bool guess_range = false);

// Ranks of 64-bit keys: out's codes are the ranks of keys[0, n); returns the distinct keys in
// ascending order. Hashes per thread when the keys repeat, sorts (key, row) pairs by radix when
// they are mostly distinct. present(i) false: row i gets the code after all keys.
struct RankedKeys {
  LocalCodes codes;
  Scratch<std::uint64_t> sorted;
  std::string how;
};
RankedKeys rank_u64(const std::uint64_t* keys, const std::uint8_t* present_bits, std::size_t n, int threads);

// The group id of every row and the keys of each group.
class GroupKeys {
 public:
  // guessed_ids_at_most > 0: integer columns' ranges may be guessed from samples (see
  // encode_key_column), where their codes index the groups directly and make at most that many
  // group ids; check missed() after filling.
  GroupKeys(const std::vector<const Column*>& keys, std::size_t rows, int threads, Report& report,
            std::uint64_t guessed_ids_at_most = 0);
  std::uint64_t groups() const { return groups_; }  // group ids are < groups(); some may hold no row
  // The group ids of rows [begin, end) into out[0, end - begin).
  void fill(std::size_t begin, std::size_t end, std::uint32_t* out) const;
  // Whether a guessed range missed a key: the ids filled are wrong, and the keys have to be
  // built again without guessing.
  bool missed() const;
  // The key columns of the given group ids, in that order.
  std::vector<Column> key_columns(std::span<const std::uint32_t> groups, int threads) const;

 private:
  void rank_combined(std::size_t rows, int threads, Report& report);
  std::vector<std::unique_ptr<KeyColumn>> columns_;
  bool ranked_{false};                                 // group ids are ranks of the combined codes
  LocalCodes gid_;                                     // then these
  std::vector<Scratch<std::uint64_t>> ranked_before_;  // per column: the combined codes ranked just before it joined
  Scratch<std::uint64_t> ranked_last_;                 // the distinct combined codes, when ranked at the end
  std::uint64_t groups_{1};
};

}  // namespace tandem::cpu_groupby
