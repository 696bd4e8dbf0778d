// Top-k over ranked lists across ranks.
//  - Objects partitioned by rank: a local topk::query on each rank, rank 0 merges the local
//    answers and sends the k best to every rank.
//  - Lists held by different ranks: TPUT with rank 0 as the coordinator (see dist.hpp and
//    topk_plan.hpp for the bounds). Every message goes through exchange(), which counts its bytes.
// Scores are the single-process top-k's exact fixed-point sums, at the scale the whole data asks
// for (the largest weighted |score| over every rank), so they carry the same bits as topk::query.
#include <algorithm>
#include <cstring>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "dist/exchange.hpp"
#include "dist/mpi_check.hpp"
#include "dist/rank_report.hpp"
#include "dist/topk_plan.hpp"
#include "tandem/core/error.hpp"
#include "tandem/dist.hpp"
#include "topk/internal.hpp"

namespace tandem::dist {
namespace {

using topk::Item;
using topk_plan::Fixed;

// ---- messages ----
struct WireItem {  // topk::Item without padding of unknown bytes
  std::uint32_t id{0};
  std::uint32_t pad{0};
  double score{0};
};
struct BlockHeader {  // one list's entries in a phase's message
  std::uint32_t list;
  std::uint32_t has_next;  // 1: the list goes on, its best score not sent is `next`
  float next;
  std::uint32_t pad;
  std::uint64_t count;
};
struct Request {  // the coordinator asks a holder for the score of id in list
  std::uint32_t list;
  std::uint32_t id;
};
struct ListInfo {  // what a holder tells everyone about a list it holds
  std::uint32_t list;
  std::uint32_t pad;
  std::uint64_t m;
  float top;
  float bottom;
};

template <class T>
std::vector<T> plain(std::vector<T, io::UninitAllocator<T>>&& v) {
  return std::vector<T>(v.begin(), v.end());
}

// Every rank's block to rank 0 (rank 0 gets them back to back in rank order; from[r]: elements of rank r).
template <class T>
std::vector<T> to_root(const Context::Impl& s, const std::vector<T>& mine, std::vector<std::uint64_t>& from,
                       Traffic& t) {
  std::vector<std::uint64_t> counts(std::size_t(s.size), 0);
  counts[0] = mine.size();
  return plain(exchange<T>(s, std::span<const T>(mine), counts, from, t));
}

// Rank 0's blocks (counts[r] elements for rank r, back to back) to each rank.
template <class T>
std::vector<T> from_root(const Context::Impl& s, const std::vector<T>& blocks, std::vector<std::uint64_t> counts,
                         Traffic& t) {
  if (s.rank != 0) counts.assign(std::size_t(s.size), 0);
  std::vector<std::uint64_t> from;
  return plain(exchange<T>(s, std::span<const T>(blocks), counts, from, t));
}

// Rank 0's vector to every rank.
template <class T>
std::vector<T> root_to_all(const Context::Impl& s, const std::vector<T>& v, Traffic& t) {
  std::vector<T> blocks;
  std::vector<std::uint64_t> counts(std::size_t(s.size), v.size());
  if (s.rank == 0)
    for (int r = 0; r < s.size; ++r) blocks.insert(blocks.end(), v.begin(), v.end());
  return from_root(s, blocks, counts, t);
}

// Every rank's vector to every rank, back to back in rank order (from[r]: elements of rank r).
template <class T>
std::vector<T> all_to_all(const Context::Impl& s, const std::vector<T>& mine, std::vector<std::uint64_t>& from,
                          Traffic& t) {
  std::vector<T> blocks;
  for (int r = 0; r < s.size; ++r) blocks.insert(blocks.end(), mine.begin(), mine.end());
  std::vector<std::uint64_t> counts(std::size_t(s.size), mine.size());
  return plain(exchange<T>(s, std::span<const T>(blocks), counts, from, t));
}

std::vector<WireItem> wire(const std::vector<Item>& items) {
  std::vector<WireItem> w(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) w[i] = WireItem{items[i].id, 0, items[i].score};
  return w;
}
std::vector<Item> unwire(const std::vector<WireItem>& w) {
  std::vector<Item> items(w.size());
  for (std::size_t i = 0; i < w.size(); ++i) items[i] = Item{w[i].id, w[i].score};
  return items;
}

void check_k(std::uint64_t k, std::uint64_t objects) {
  if (k < 1 || k > objects)
    throw UsageError(fmt::format("k = {} must be between 1 and the number of objects ({})", k, objects));
}

// ---- objects partitioned by rank ----

// The k best of the local objects with every sum at the given (global) scale: the path taken when
// this rank's own data would choose another scale than the whole data does.
std::vector<Item> local_top_at_scale(const topk::Lists& l, std::uint64_t k, const topk::detail::AggSpec& spec) {
  using namespace topk::detail;
  std::vector<Acc> acc(l.m, acc_identity(spec.kind));
  for (std::uint32_t i = 0; i < l.n; ++i)
    for (const topk::Entry& e : l.list(i)) acc[e.id] = acc_combine(spec.kind, acc[e.id], acc_of(spec, i, e.score));
  std::vector<Item> all(l.m);
  for (std::uint64_t id = 0; id < l.m; ++id) all[id] = Item{std::uint32_t(id), acc_score(spec, acc[id]) + 0.0};
  return topk_plan::best_k(std::move(all), k);
}

struct Shape {
  std::uint64_t n;
  std::uint64_t m;
};

}  // namespace

TopkResult topk_partitioned(const Context& ctx, const topk::Lists& local, std::uint64_t k, const topk::Aggregate& agg,
                            const topk::Options& opts) {
  const Context::Impl& s = ctx.impl();
  TopkResult out;
  DistReport& rep = out.report;
  rep.report.operation = "dist topk (objects by rank)";
  rep.count_in = local.m;
  StageClock clock;
  // A rank without objects may pass no lists at all (a default Lists).
  ctx.run_agreed([&] {
    if (local.n > 0 || local.m > 0) topk::validate(local);
  });

  std::vector<std::uint64_t> from;
  const std::vector<Shape> shapes = all_to_all(s, std::vector<Shape>{{local.n, local.m}}, from, rep.traffic);
  std::uint64_t total = 0, offset = 0;
  int first = -1;  // the lowest rank with lists: its count is the one
  for (int r = 0; r < s.size; ++r) {
    if (r == s.rank) offset = total;
    total += shapes[r].m;
    if (first < 0 && shapes[r].n > 0) first = r;
  }
  const auto n = std::uint32_t(first < 0 ? 0 : shapes[first].n);
  ctx.run_agreed([&] {
    if (local.n != n && local.n != 0)
      throw InputError(
          fmt::format("{} lists, but rank {} has {}: every rank must hold the same lists", local.n, first, n));
    if (total > (std::uint64_t{1} << 32))
      throw InputError(fmt::format("{} objects over all ranks: ids are u32, at most 2^32", total));
    check_k(k, total);
    agg.check(n);
  });

  // The scale of exact sums comes from the largest |score| of each list over every rank.
  std::vector<float> max_abs = topk::detail::list_max_abs(local), global_max(n);
  max_abs.resize(n, 0.0f);
  check_mpi(MPI_Allreduce(max_abs.data(), global_max.data(), int(n), MPI_FLOAT, MPI_MAX, s.comm), "MPI_Allreduce");
  rep.traffic.bytes_sent += n * sizeof(float) * std::uint64_t(s.size - 1);
  rep.traffic.bytes_received += n * sizeof(float) * std::uint64_t(s.size - 1);
  clock.lap(rep.report, "setup", fmt::format("{} objects on this rank of {}", local.m, total));

  std::vector<Item> mine;
  ctx.run_agreed([&] {
    if (local.m == 0) return;
    const std::uint64_t local_k = std::min(k, local.m);
    const auto global_spec = topk::detail::spec_of(agg, n, global_max);
    const auto local_spec = topk::detail::spec_of(agg, n, max_abs);
    if (topk::detail::is_sum(global_spec.kind) && global_spec.scale != local_spec.scale) {
      mine = local_top_at_scale(local, local_k, global_spec);
      rep.report.note("local: every object aggregated at the whole data's scale of exact sums");
      return;
    }
    topk::Options o = opts;
    o.max_depth = 0;
    topk::Result r = topk::query(local, local_k, agg, o);
    for (auto& line : r.report.notes) rep.report.note("local: " + line);
    for (auto& line : r.report.notices) rep.report.notice(line);
    rep.report.details()["local"] = r.report.details();
    mine = std::move(r.items);
  });
  for (Item& it : mine) it.id = std::uint32_t(it.id + offset);
  clock.lap(rep.report, "local top-k", fmt::format("{} of {} objects", mine.size(), local.m));

  const std::vector<WireItem> gathered = to_root(s, wire(mine), from, rep.traffic);
  std::vector<WireItem> best;
  if (s.rank == 0) best = wire(topk_plan::best_k(unwire(gathered), k));
  out.items = unwire(root_to_all(s, best, rep.traffic));
  clock.lap(rep.report, "merge", fmt::format("{} local answers on rank 0", s.size));
  rep.count_out = out.items.size();
  gather_rank_report(s, rep);
  return out;
}

namespace {

// ---- lists held by different ranks ----

struct Layout {
  std::uint64_t m{0};
  topk::detail::AggSpec spec;
  std::vector<topk_plan::ListBound> bounds;  // per list: low (last score), cap (first score)
  std::vector<int> holder;                   // the rank holding each list
};

// Checks this rank's part and agrees on the layout: who holds which list, m, the scale of sums.
Layout agree_layout(const Context& ctx, const topk::Lists& lists, std::span<const std::uint32_t> indices,
                    std::uint32_t total, std::uint64_t k, const topk::Aggregate& agg, Traffic& traffic) {
  const Context::Impl& s = ctx.impl();
  ctx.run_agreed([&] {
    if (total < 1 || total > topk::kMaxLists)
      throw UsageError(fmt::format("total_lists = {}: must be between 1 and {}", total, topk::kMaxLists));
    if (agg.kind != topk::ScoreCombine::sum && agg.kind != topk::ScoreCombine::wsum)
      throw UsageError(
          fmt::format("aggregate {}: lists held by different ranks need sum or wsum (TPUT's bounds)", agg.to_string()));
    agg.check(total);
    if (indices.size() != lists.n)
      throw UsageError(fmt::format("{} list indices for {} lists", indices.size(), lists.n));
    for (std::size_t j = 0; j < indices.size(); ++j) {
      if (indices[j] >= total)
        throw UsageError(
            fmt::format("list index {} (of list {} here) is not below total_lists = {}", indices[j], j, total));
      for (std::size_t i = 0; i < j; ++i)
        if (indices[i] == indices[j]) throw UsageError(fmt::format("list {} is given twice", indices[j]));
    }
    if (lists.n == 0) return;
    try {
      topk::validate(lists);
    } catch (const InputError& e) {
      throw InputError(
          fmt::format("{} (the lists here are lists {} of {})", e.what(), fmt::join(indices, ", "), total));
    }
  });

  std::vector<std::uint64_t> from;
  const auto totals = all_to_all(s, std::vector<std::uint64_t>{total}, from, traffic);
  ctx.run_agreed([&] {
    if (total != totals[0]) throw UsageError(fmt::format("total_lists = {}, but rank 0 has {}", total, totals[0]));
  });

  std::vector<ListInfo> mine;
  for (std::uint32_t j = 0; j < lists.n; ++j) {
    const auto l = lists.list(j);
    mine.push_back(
        ListInfo{indices[j], 0, lists.m, l.empty() ? 0.0f : l.front().score, l.empty() ? 0.0f : l.back().score});
  }
  const std::vector<ListInfo> infos = all_to_all(s, mine, from, traffic);

  Layout lay;
  std::vector<int>& holder = lay.holder;
  holder.assign(total, -1);
  std::vector<float> max_abs(total, 0.0f), top(total, 0.0f), bottom(total, 0.0f);
  ctx.run_agreed([&] {
    int first = -1;  // the lowest rank holding a list: its m is the one
    std::size_t at = 0;
    for (int r = 0; r < s.size; ++r)
      for (std::uint64_t j = 0; j < from[r]; ++j, ++at) {
        const ListInfo& in = infos[at];
        if (holder[in.list] >= 0 && r == s.rank)
          throw UsageError(fmt::format("list {} is also held by rank {}", in.list, holder[in.list]));
        if (holder[in.list] < 0) holder[in.list] = r;
        if (first < 0) {
          first = r;
          lay.m = in.m;
        }
        if (in.m != lay.m && r == s.rank)
          throw InputError(
              fmt::format("list {} has {} objects, but the lists of rank {} have {}", in.list, in.m, first, lay.m));
        top[in.list] = in.top;
        bottom[in.list] = in.bottom;
        max_abs[in.list] = std::max(std::fabs(in.top), std::fabs(in.bottom));
      }
    if (s.rank == 0)
      for (std::uint32_t i = 0; i < total; ++i)
        if (holder[i] < 0) throw UsageError(fmt::format("list {} of {} is held by no rank", i, total));
    check_k(k, lay.m);
    lay.spec = topk::detail::spec_of(agg, total, max_abs);
  });
  for (std::uint32_t i = 0; i < total; ++i)
    lay.bounds.push_back(
        {topk_plan::contribution(lay.spec, i, bottom[i]), topk_plan::contribution(lay.spec, i, top[i])});
  return lay;
}

// This rank's entries of its active lists at positions from .. until - 1, while keep(list,
// contribution) holds, as one message: the number of blocks, a header per list, then the entries. With `edge`,
// the header also gives the first score left out: it caps what the list adds to an object not
// seen in it.
template <class Keep>
std::vector<std::byte> entries_while(const topk::Lists& lists, std::span<const std::uint32_t> indices,
                                     const Layout& lay, std::uint64_t from, std::uint64_t until, bool edge,
                                     Keep&& keep) {
  std::vector<BlockHeader> heads;
  std::vector<topk::Entry> body;
  for (std::uint32_t j = 0; j < lists.n; ++j) {
    const std::uint32_t i = indices[j];
    if (!lay.bounds[i].active()) continue;
    const auto l = lists.list(j);
    const std::uint64_t begin = std::min<std::uint64_t>(from, l.size()), end = std::min<std::uint64_t>(until, l.size());
    std::uint64_t p = begin;
    while (p < end && keep(i, topk_plan::contribution(lay.spec, i, l[p].score))) ++p;
    const bool next = edge && p < l.size();
    heads.push_back(BlockHeader{i, next ? 1u : 0u, next ? l[p].score : 0.0f, 0, p - begin});
    body.insert(body.end(), l.begin() + std::ptrdiff_t(begin), l.begin() + std::ptrdiff_t(p));
  }
  const std::uint64_t blocks = heads.size();
  std::vector<std::byte> out(sizeof blocks + heads.size() * sizeof(BlockHeader) + body.size() * sizeof(topk::Entry));
  std::byte* at = out.data();
  std::memcpy(at, &blocks, sizeof blocks);
  at += sizeof blocks;
  if (!heads.empty()) std::memcpy(at, heads.data(), heads.size() * sizeof(BlockHeader));
  at += heads.size() * sizeof(BlockHeader);
  if (!body.empty()) std::memcpy(at, body.data(), body.size() * sizeof(topk::Entry));
  return out;
}

// The coordinator takes in a phase's messages (from[r] bytes of rank r's, back to back): the
// entries, and each list's cap. Returns the entries taken in.
std::uint64_t take_entries(topk_plan::Candidates& c, const Layout& lay, const std::vector<std::byte>& messages,
                           const std::vector<std::uint64_t>& from) {
  std::uint64_t taken = 0;
  const std::byte* at = messages.data();
  for (std::uint64_t bytes : from) {
    if (bytes == 0) continue;
    std::uint64_t blocks = 0;
    std::memcpy(&blocks, at, sizeof blocks);
    std::vector<BlockHeader> heads(blocks);
    if (blocks > 0) std::memcpy(heads.data(), at + sizeof blocks, blocks * sizeof(BlockHeader));
    const std::byte* entry = at + sizeof blocks + blocks * sizeof(BlockHeader);
    for (const BlockHeader& h : heads) {
      for (std::uint64_t q = 0; q < h.count; ++q, entry += sizeof(topk::Entry)) {
        topk::Entry e;
        std::memcpy(&e, entry, sizeof e);
        c.add(h.list, e.id, topk_plan::contribution(lay.spec, h.list, e.score));
      }
      if (h.has_next) c.set_cap(h.list, topk_plan::contribution(lay.spec, h.list, h.next));
      taken += h.count;
    }
    at += bytes;
  }
  return taken;
}

// A holder answers the coordinator's requests: the score of each (list, id), in order, through
// an id -> score index of each list asked about.
std::vector<float> look_up(const topk::Lists& lists, std::span<const std::uint32_t> indices,
                           const std::vector<Request>& requests) {
  std::vector<std::vector<float>> by_id(lists.n);
  std::vector<float> out;
  out.reserve(requests.size());
  for (const Request& q : requests) {
    const auto j = std::size_t(std::find(indices.begin(), indices.end(), q.list) - indices.begin());
    if (j >= lists.n || q.id >= lists.m)
      throw Error(fmt::format("asked for object {} of list {}, which this rank does not hold", q.id, q.list));
    auto& index = by_id[j];
    if (index.empty()) {
      index.resize(lists.m);
      for (const topk::Entry& e : lists.list(std::uint32_t(j))) index[e.id] = e.score;
    }
    out.push_back(index[q.id]);
  }
  return out;
}

// The requests for the scores `ids` lack in the active lists, grouped by the rank holding the
// list (counts[r] for rank r).
std::vector<Request> requests_for(const topk_plan::Candidates& c, const std::vector<std::uint32_t>& ids,
                                  const std::vector<int>& holder, int ranks, std::vector<std::uint64_t>& counts) {
  std::vector<std::vector<Request>> by_rank(std::size_t(ranks), std::vector<Request>{});
  for (std::uint32_t id : ids)
    for (std::uint64_t miss = c.missing(id); miss; miss &= miss - 1) {
      const auto i = std::uint32_t(__builtin_ctzll(miss));
      by_rank[holder[i]].push_back(Request{i, id});
    }
  std::vector<Request> all;
  counts.assign(std::size_t(ranks), 0);
  for (int r = 0; r < ranks; ++r) {
    counts[r] = by_rank[r].size();
    all.insert(all.end(), by_rank[r].begin(), by_rank[r].end());
  }
  return all;
}

// Collective: rank 0 asks the holders for every score the objects `ids` (on rank 0) lack, looked
// up by id, and adds them: those objects' scores are then exact. Returns the scores fetched.
std::uint64_t fetch_missing(const Context& ctx, topk_plan::Candidates& cand, const Layout& lay,
                            const std::vector<std::uint32_t>& ids, const topk::Lists& lists,
                            std::span<const std::uint32_t> indices, Traffic& traffic) {
  const Context::Impl& s = ctx.impl();
  std::vector<std::uint64_t> counts(std::size_t(s.size), 0), from;
  std::vector<Request> requests;
  if (s.rank == 0) requests = requests_for(cand, ids, lay.holder, s.size, counts);
  const auto mine = from_root(s, requests, counts, traffic);
  std::vector<float> answers;
  ctx.run_agreed([&] { answers = look_up(lists, indices, mine); });
  const auto scores = to_root(s, answers, from, traffic);
  for (std::size_t q = 0; q < requests.size(); ++q)
    cand.add(requests[q].list, requests[q].id, topk_plan::contribution(lay.spec, requests[q].list, scores[q]));
  return requests.size();
}

}  // namespace

TopkResult topk_distributed_lists(const Context& ctx, const topk::Lists& my_lists,
                                  std::span<const std::uint32_t> my_list_indices, std::uint32_t total_lists,
                                  std::uint64_t k, const topk::Aggregate& agg, const ListsTopkOptions& opts) {
  const Context::Impl& s = ctx.impl();
  TopkResult out;
  DistReport& rep = out.report;
  rep.report.operation = "dist topk (lists by rank)";
  rep.count_in = my_lists.entries.size();
  StageClock clock;
  const Layout lay = agree_layout(ctx, my_lists, my_list_indices, total_lists, k, agg, rep.traffic);
  topk_plan::Candidates cand(lay.bounds);
  const std::uint32_t active = cand.active_lists();
  clock.lap(rep.report, "setup", fmt::format("{} of {} lists here, {} objects", my_lists.n, total_lists, lay.m));

  // Counts for the report (rank 0's, sent to every rank with the result).
  enum { entries1, seen1, lookups1, entries2, seen2, survivors, lookups3, count };
  std::vector<std::uint64_t> stats(count, 0);
  std::vector<Item> best;
  if (active == 0) {
    // Every list gives every object the same score: the k smallest ids, no phase needed.
    for (std::uint32_t id = 0; id < k; ++id) best.push_back(Item{id, topk_plan::score_of(lay.spec, cand.low_sum())});
    for (const char* name : {"phase 1", "phase 1 lookups", "phase 2", "phase 3"})
      clock.lap(rep.report, name, "no list varies");
  } else {
    // Phase 1: the top k of every list.
    std::vector<std::uint64_t> from;
    const auto first = to_root(
        s, entries_while(my_lists, my_list_indices, lay, 0, k, false, [](std::uint32_t, Fixed) { return true; }), from,
        rep.traffic);
    if (s.rank == 0) {
      stats[entries1] = take_entries(cand, lay, first, from);
      stats[seen1] = cand.size();
    }
    clock.lap(rep.report, "phase 1", "the top k of every list");

    // Optionally the exact scores of phase 1's objects: a higher k-th best lower bound.
    if (opts.exact_phase1_scores)
      stats[lookups1] = fetch_missing(ctx, cand, lay, cand.objects(), my_lists, my_list_indices, rep.traffic);
    std::vector<Fixed> threshold(1, 0);
    if (s.rank == 0) threshold[0] = topk_plan::phase2_threshold(cand.kth_lower(k), cand.low_sum(), active);
    const Fixed t = root_to_all(s, threshold, rep.traffic)[0];
    clock.lap(rep.report, "phase 1 lookups", opts.exact_phase1_scores ? "the scores phase 1's objects lack" : "off");

    // Phase 2: every further entry at least T above its list's low; prune by the new k-th lower bound.
    const auto second = to_root(s,
                                entries_while(my_lists, my_list_indices, lay, k, lay.m, true,
                                              [&](std::uint32_t i, Fixed c) { return c - lay.bounds[i].low >= t; }),
                                from, rep.traffic);
    std::vector<std::uint32_t> alive;
    if (s.rank == 0) {
      stats[entries2] = take_entries(cand, lay, second, from);
      stats[seen2] = cand.size();
      alive = cand.survivors(cand.kth_lower(k));
      stats[survivors] = alive.size();
    }
    clock.lap(rep.report, "phase 2", "the entries above the threshold");

    // Phase 3: the survivors' missing scores, looked up by id on their lists' holders.
    stats[lookups3] = fetch_missing(ctx, cand, lay, alive, my_lists, my_list_indices, rep.traffic);
    if (s.rank == 0) {
      std::vector<Item> exact;
      for (std::uint32_t id : alive) exact.push_back(Item{id, topk_plan::score_of(lay.spec, cand.lower(id))});
      best = topk_plan::best_k(std::move(exact), k);
    }
    clock.lap(rep.report, "phase 3", "the survivors' missing scores by id");
  }
  out.items = unwire(root_to_all(s, wire(best), rep.traffic));
  stats = root_to_all(s, stats, rep.traffic);
  clock.lap(rep.report, "result", "the k best to every rank");

  rep.report.details()["tput"] = {{"active_lists", active},
                                  {"entries_phase1", stats[entries1]},
                                  {"objects_phase1", stats[seen1]},
                                  {"lookups_phase1", stats[lookups1]},
                                  {"entries_phase2", stats[entries2]},
                                  {"objects_phase2", stats[seen2]},
                                  {"survivors", stats[survivors]},
                                  {"lookups_phase3", stats[lookups3]}};
  rep.report.note(
      fmt::format("TPUT on {} of {} lists: phase 1 sent {} entries ({} objects, {} scores looked up), "
                  "phase 2 {} more ({} objects seen), {} survived the bounds, phase 3 looked up {} scores",
                  active, total_lists, stats[entries1], stats[seen1], stats[lookups1], stats[entries2], stats[seen2],
                  stats[survivors], stats[lookups3]));
  rep.count_out = out.items.size();
  gather_rank_report(s, rep);
  return out;
}

}  // namespace tandem::dist
