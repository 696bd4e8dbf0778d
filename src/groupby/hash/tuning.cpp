#include "groupby/hash/tuning.hpp"

#include <stdexcept>

#include <fmt/format.h>

#include "groupby/hash/plan.hpp"

namespace tandem::hash_groupby::tuning {

int cardinality_class(std::uint64_t distinct, std::uint64_t sampled) {
  if (distinct <= 1024) return 0;
  if (distinct * 8 < sampled) return 1;
  return distinct * 2 < sampled ? 2 : 3;
}

std::string problem_class(std::size_t key_bytes, std::size_t acc_bytes, std::uint64_t records, int card,
                          bool hot_keys) {
  return fmt::format("k{}v{}/{}/card{}/hot{}", key_bytes, acc_bytes, size_class(records), card, hot_keys ? 1 : 0);
}

HashPlan plan_from_params(const HashPlan& base, const nlohmann::json& j) {
  HashPlan p = base;
  p.threads = positive_field<int>(j, "N");
  p.blocks_per_sm = positive_field<int>(j, "bps");
  p.p = positive_field(j, "p");
  p.hot_fraction = positive_field(j, "hot");
  p.smem_budget = positive_field<std::size_t>(j, "smem");
  p.table_factor = j.value("tf", kTableFactor);
  p.warp_match = j.value("wm", true);
  p.partition = j.value("pt", true);
  p.buckets = j.value("bk", true);
  return p;
}

HashPlan checked_plan(const HashPlan& base, const nlohmann::json& j) {
  HashPlan p = plan_from_params(base, j);
  if (p.threads < 32 || p.threads > 1024 || p.threads % 32 || p.blocks_per_sm > 64 || p.p > 0.5 || p.hot_fraction > 1 ||
      !(p.table_factor >= 1 && p.table_factor <= 64))
    throw std::out_of_range("a parameter is out of range: " + j.dump());
  return p;
}

std::vector<Candidate> candidates(bool count, const Options& o, int card) {
  std::vector<Candidate> cands;
  auto add = [&](int N, int bps, double p, double hf, std::size_t smem, double tf = kTableFactor, bool wm = true,
                 bool pt = true, bool bk = true) {
    nlohmann::json j{{"N", N},   {"bps", bps}, {"p", p},   {"hot", hf}, {"smem", smem},
                     {"tf", tf}, {"wm", wm},   {"pt", pt}, {"bk", bk}};
    cands.push_back({plan_from_params(HashPlan{}, j).label(), j});
  };
  add(512, 4, 0.01, 0.10, 48 * 1024);
  add(1024, 2, 0.01, 0.10, 96 * 1024);
  add(256, 8, 0.01, 0.10, 24 * 1024);
  add(512, 4, 0.003, 0.10, 48 * 1024);
  add(512, 4, 0.03, 0.05, 48 * 1024);
  add(512, 4, 0.01, 0.50, 48 * 1024);
  add(512, 4, 0.01, 0.10, 48 * 1024, 2.0);
  if (count && o.warp_match) {  // lanes grouped by key or not (match_any costs more the more keys a warp holds)
    add(512, 4, 0.01, 0.10, 48 * 1024, 3.0, false);
    add(1024, 2, 0.01, 0.10, 96 * 1024, 3.0, false);
  }
  if (count && o.partition_cold && card > 0) {  // cold keys straight into the global table
    add(512, 4, 0.01, 0.10, 48 * 1024, 3.0, true, false);
    add(1024, 2, 0.01, 0.10, 96 * 1024, 3.0, true, false);
    add(1024, 2, 0.01, 0.10, 96 * 1024, 2.0, true, false);
    add(1024, 2, 0.01, 0.10, 110 * 1024, 3.0, true, false);  // the most two blocks of an SM hold
  }
  if (o.hot_buckets && card > 0) {
    // hot keys in a linear-probing table (half full) instead of the bucketed two-choice one
    add(512, 4, 0.01, 0.10, 48 * 1024, 3.0, true, true, false);
    add(1024, 2, 0.01, 0.10, 96 * 1024, 3.0, true, true, false);
    // a larger bucketed table: more of a skewed input stays in shared memory, fewer blocks
    add(1024, 1, 0.01, 0.10, 144 * 1024);
    add(512, 2, 0.01, 0.10, 96 * 1024);
  }
  if (card == 0) {
    // at most 1,024 keys in the first 2^16 records: a sample of 0.1% finds them all, and the
    // sampling pass costs ~3x the main pass per record
    add(512, 4, 0.001, 0.10, 48 * 1024);
    add(1024, 2, 0.001, 0.10, 96 * 1024);
  }
  return cands;
}

}  // namespace tandem::hash_groupby::tuning
