// Word count across ranks: each rank counts its own text (the CPU or GPU engine), the partial
// counts go to the rank a hash of the word names, and the owners add them up.
#include <algorithm>
#include <cstring>
#include <unordered_map>

#include <fmt/format.h>

#include "dist/exchange.hpp"
#include "dist/mpi_check.hpp"
#include "dist/rank_report.hpp"
#include "tandem/core/hash.hpp"
#include "tandem/dist.hpp"

namespace tandem::dist {
namespace {

using Counts = std::vector<std::pair<std::string, std::uint64_t>>;

// A word on the wire: its length (u32), its count (u64), its bytes.
void put_word(std::vector<std::byte>& out, const std::string& w, std::uint64_t count) {
  const std::uint32_t n = std::uint32_t(w.size());
  const std::size_t at = out.size();
  out.resize(at + 12 + n);
  std::memcpy(out.data() + at, &n, 4);
  std::memcpy(out.data() + at + 4, &count, 8);
  std::memcpy(out.data() + at + 12, w.data(), n);
}

// Sends each word to `owner(word)`; returns what this rank received, summed per word.
template <class Owner>
Counts send_and_sum(const Context& ctx, const Counts& words, Owner&& owner, Traffic& traffic) {
  const int p = ctx.size();
  std::vector<std::vector<std::byte>> blocks(static_cast<std::size_t>(p));
  for (const auto& [w, c] : words) put_word(blocks[owner(w)], w, c);
  std::vector<std::byte> send;
  std::vector<std::uint64_t> counts(static_cast<std::size_t>(p));
  for (int d = 0; d < p; ++d) {
    counts[d] = blocks[d].size();
    send.insert(send.end(), blocks[d].begin(), blocks[d].end());
    std::vector<std::byte>().swap(blocks[d]);
  }
  std::vector<std::byte> received;
  std::vector<std::uint64_t> recv_counts;
  const Traffic moved = exchange_bytes(ctx.impl(), send.data(), counts, recv_counts, [&](std::uint64_t n) {
    received.resize(n);
    return received.data();
  });
  traffic.bytes_sent += moved.bytes_sent;
  traffic.bytes_received += moved.bytes_received;
  std::unordered_map<std::string, std::uint64_t> sum;
  for (std::size_t at = 0; at + 12 <= received.size();) {
    std::uint32_t n;
    std::uint64_t c;
    std::memcpy(&n, received.data() + at, 4);
    std::memcpy(&c, received.data() + at + 4, 8);
    sum[std::string(reinterpret_cast<const char*>(received.data() + at + 12), n)] += c;
    at += 12 + n;
  }
  Counts out(std::make_move_iterator(sum.begin()), std::make_move_iterator(sum.end()));
  mapreduce::sort_word_counts(out, ctx.threads());  // this rank's share of the host's cores
  return out;
}

}  // namespace

WordCountResult wordcount(const Context& ctx, std::string_view text, const mapreduce::WordCountOptions& given,
                          bool gather) {
  mapreduce::WordCountOptions opts = given;
  if (opts.engine.threads <= 0) opts.engine.threads = ctx.threads();  // the host's cores shared by its ranks
  WordCountResult out;
  Report& report = out.report.report;
  report.operation = "dist wordcount";
  out.report.count_in = text.size();
  StageClock clock;
  mapreduce::WordCount local;
  ctx.run_agreed([&] { local = mapreduce::wordcount(text, opts); });
  for (auto& n : local.report.notices) report.notice(n);
  clock.lap(report, "local count", fmt::format("{} words, {} distinct", local.total_words, local.words.size()));

  const int p = ctx.size();
  out.words = send_and_sum(
      ctx, local.words, [&](const std::string& w) { return int(hash_bytes(w.data(), w.size()) % std::uint64_t(p)); },
      out.report.traffic);
  clock.lap(report, "shuffle and sum", fmt::format("{} distinct words owned", out.words.size()));

  std::uint64_t total = local.total_words;
  check_mpi(MPI_Allreduce(&local.total_words, &total, 1, MPI_UINT64_T, MPI_SUM, ctx.comm()), "MPI_Allreduce");
  out.total_words = total;
  if (gather) {
    out.words = send_and_sum(
        ctx, out.words, [](const std::string&) { return 0; }, out.report.traffic);
    clock.lap(report, "gather", fmt::format("{} distinct words on rank 0", out.words.size()));
  }
  out.report.count_out = out.words.size();
  gather_rank_report(ctx.impl(), out.report);
  return out;
}

}  // namespace tandem::dist
