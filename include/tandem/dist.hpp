// tandem across processes: SPMD, one process (rank) per GPU or per CPU socket, started by
// mpirun/srun. Each rank holds a shard of the input and gets its part of the result.
//
//   MPI_Init(&argc, &argv);
//   {
//     tandem::dist::Context ctx(MPI_COMM_WORLD);
//     std::vector<std::uint32_t> keys = my_shard();
//     auto r = tandem::dist::sort(ctx, keys);   // keys: now rank r's slice of the global order
//   }
//   MPI_Finalize();
//
// Every operation is collective: all ranks of the context call it with the same options. When
// one rank fails (bad input, out of memory), every rank throws the same error, naming the rank
// that failed, instead of waiting for it forever. A rank that dies is MPI's to report: mpirun
// ends the others.
//
// Host data moves with MPI (MPI_Alltoallv); when NCCL was found and every rank has a GPU of its
// own, the context also holds an NCCL communicator bootstrapped through MPI.
#pragma once
#include <cstdint>
#include <exception>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <mpi.h>

#include "tandem/core/report.hpp"
#include "tandem/groupby.hpp"
#include "tandem/mapreduce.hpp"
#include "tandem/sort.hpp"
#include "tandem/table.hpp"
#include "tandem/topk.hpp"

#if TANDEM_HAS_CUDA
#include "tandem/cuda/buffers.hpp"
#endif

namespace tandem::dist {

struct ContextOptions {
  // Build an NCCL communicator when NCCL was built in and every rank on a host has a GPU of its
  // own (NCCL refuses two ranks on one GPU). Host data never needs it.
  bool use_nccl{true};
  // CPU threads of this rank for the library's own parallel steps and for operations whose
  // options leave threads at 0; 0: the host's cores shared evenly by the ranks on it.
  int threads{0};
  // Bytes of receive buffers the context keeps between operations, so that an exchange writes
  // to memory already faulted in (as warm as what MPI's own benchmarks reuse) instead of paying a
  // page fault per page. Kept: at most this much beyond what an operation itself holds; 0: none.
  std::uint64_t keep_receive_bytes{std::uint64_t{2} << 30};
};

class Context {
 public:
  // Duplicates `comm`: the library's messages never mix with the caller's. Collective.
  explicit Context(MPI_Comm comm, const ContextOptions& options = {});
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  int rank() const noexcept;
  int size() const noexcept;
  MPI_Comm comm() const noexcept;
  int local_rank() const noexcept;  // rank among the processes of this host
  int local_size() const noexcept;
  int gpu() const noexcept;  // the GPU this rank uses, or -1 (no GPU, or not its own)
  bool has_nccl() const noexcept;
  int threads() const noexcept;  // ContextOptions::threads, or the cores of the host / ranks on it
  std::string describe() const;  // "4 ranks on 1 host, MPI (Open MPI 4.1.4), NCCL: no (…)"
  // The receive buffers kept between operations (ContextOptions::keep_receive_bytes): their
  // bytes, and freeing them now (not collective).
  std::uint64_t kept_buffer_bytes() const noexcept;
  void release_buffers() const noexcept;

  // Collective. Each rank passes the error it met (or none); when any rank failed, every rank
  // throws the lowest failing rank's error, of the same kind (UsageError, InputError, Error),
  // its message prefixed with "rank R: ".
  void agree(std::exception_ptr local_error) const;

  // Runs f() on this rank, then agrees (above): a failure anywhere becomes a failure everywhere.
  template <class F>
  void run_agreed(F&& f) const {
    std::exception_ptr e;
    try {
      f();
    } catch (...) {
      e = std::current_exception();
    }
    agree(e);
  }

  struct Impl;
  Impl& impl() const noexcept { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

// What moved between ranks in one operation, summed over this rank's peers (itself excluded).
struct Traffic {
  std::uint64_t bytes_sent{0};
  std::uint64_t bytes_received{0};
};

// The Report of a distributed operation holds this rank's stages; details()["ranks"] lists, for
// every rank, its stages (name → seconds), elements in and out, and bytes sent and received.
struct DistReport {
  Report report;
  Traffic traffic;
  std::uint64_t count_in{0};   // elements (rows, bytes of text) this rank held
  std::uint64_t count_out{0};  // elements (rows, words) this rank holds after
};

// Sample sort across ranks. On return `keys` holds the r-th slice of the global order of every
// rank's keys (rank 0 the smallest; the largest with opts.descending). Slices are balanced to one
// element: ranks get N/P or N/P + 1 keys, whatever the duplicates, because equal keys are ordered
// by (rank, position). opts apply to the local sort on each rank (a GPU where the rank has one).
template <class K>
DistReport sort(const Context& ctx, std::vector<K>& keys, const SortOptions& opts = {});

// As sort, carrying values with their keys; stable: equal keys keep their order of
// (rank, position in the input).
template <class K, class V>
DistReport sort_pairs(const Context& ctx, std::vector<K>& keys, std::vector<V>& values, const SortOptions& opts = {});

#if TANDEM_HAS_CUDA
// Keys in device memory on this rank's GPU: sorted across ranks as `sort` does, and `keys`
// replaced by this rank's slice (N/P ± 1 keys) in a new device buffer. Each key is sorted once:
// the keys are grouped on their GPU by the rank that owns their range, exchanged, sorted there
// with tandem::sort_device, and a few keys at the slices' edges move again for exact slices. The
// exchange goes GPU to GPU through NCCL when the context has it (every rank a GPU of its own),
// else through host memory and MPI (ranks sharing one GPU). The Report notes which.
template <class K>
DistReport sort_device(const Context& ctx, gpu::DeviceBuffer<K>& keys, const SortOptions& opts = {});

// As sort_device, carrying values (uint32 or uint64) with their keys; stable: equal keys keep
// their order of (rank, position in the input), as sort_pairs. Each rank's pairs are grouped for
// their owners in input order (a stable radix sort of the owners and a gather), and the local
// sort is tandem::sort_pairs_device. keys and values are replaced by this rank's slice.
template <class K, class V>
DistReport sort_pairs_device(const Context& ctx, gpu::DeviceBuffer<K>& keys, gpu::DeviceBuffer<V>& values,
                             const SortOptions& opts = {});
#endif

// Group-by across ranks: every rank groups its rows, the partial groups are shuffled by a hash of
// the keys, and each rank finishes the groups it owns. The result (sorted by the keys) is
// partitioned: each group lives on exactly one rank. With gather, rank 0 receives the whole
// result, sorted, and the other ranks an empty table of the same columns. Aggregations that
// cannot be combined from partial groups (median, quantile, nunique, top, var, std) shuffle the
// rows themselves instead. The columns must have the same names and types on every rank.
struct GroupByResult {
  Table table;
  DistReport report;
};
GroupByResult groupby(const Context& ctx, const Table& input, const GroupBySpec& spec,
                      const GroupByOptions& options = {}, bool gather = false);

// Word count across ranks: each rank counts its text, the partial counts are shuffled by a hash
// of the word and summed. words: sorted as mapreduce::wordcount sorts (count descending, then
// bytes); partitioned, or all on rank 0 with gather. total_words: the total over every rank.
struct WordCountResult {
  std::vector<std::pair<std::string, std::uint64_t>> words;
  std::uint64_t total_words{0};
  DistReport report;
};
WordCountResult wordcount(const Context& ctx, std::string_view text, const mapreduce::WordCountOptions& opts = {},
                          bool gather = false);

// The byte range [begin, end) of a file of `file_size` bytes that rank `rank` of `size` reads
// when the ranks share one file: equal cuts, each moved forward to just after the next `sep`
// (a line break), so that no record is split. Needs the bytes around the cuts: `find_sep(pos)`
// returns the position of the first `sep` at or after pos (file_size if none).
template <class FindSep>
std::pair<std::uint64_t, std::uint64_t> record_range(std::uint64_t file_size, int rank, int size, FindSep&& find_sep) {
  auto cut = [&](int r) -> std::uint64_t {
    if (r <= 0) return 0;
    if (r >= size) return file_size;
    const std::uint64_t at = file_size / std::uint64_t(size) * std::uint64_t(r);
    if (at == 0) return 0;
    const std::uint64_t s = find_sep(at - 1);  // a cut just after a separator stays put
    return s >= file_size ? file_size : s + 1;
  };
  return {cut(rank), cut(rank + 1)};
}

// Replaces "{rank}" and "{size}" in a path by the rank and the number of ranks.
std::string expand_rank_path(std::string path, int rank, int size);

// ---- top-k over ranked lists (tandem/topk.hpp) ----
// Both return the same k best objects, best first, with their exact scores, on every rank: the
// answer topk::query gives over the whole data (scores with the same bits; ties to the smaller id).
struct TopkResult {
  std::vector<topk::Item> items;
  DistReport report;
};

// Objects partitioned by rank: every rank holds all n lists (n the same everywhere), each over its
// own objects only, with local ids 0 .. local.m - 1; rank r's object j is global object
// (objects of ranks below r) + j. Each rank runs topk::query on its objects (opts: algorithm,
// device, threads; max_depth is not used: the merge needs every rank's answer), then rank 0 merges
// the P local top-k lists and sends the result to every rank: (P - 1) * k items each way.
// k must be 1 .. the total number of objects (UsageError); a rank may hold no objects (and then
// no lists: a default topk::Lists).
TopkResult topk_partitioned(const Context& ctx, const topk::Lists& local, std::uint64_t k,
                            const topk::Aggregate& agg = {}, const topk::Options& opts = {});

// Lists held by different ranks: rank r holds the lists my_lists (list j of it is list
// my_list_indices[j] of total_lists), each complete over all m objects; every list 0 ..
// total_lists - 1 is held by exactly one rank, and a rank may hold none (my_lists.n == 0).
// The aggregate must be sum or wsum (weights over total_lists): other aggregates are UsageError;
// so is k outside 1 .. m. Runs TPUT (Cao & Wang, PODC 2004; rank 0 the coordinator): 1. the top k of every list;
// 2. every entry whose contribution is at least T = (tau1 - lows) / lists above its list's lowest,
// tau1 the k-th best lower bound; 3. the missing scores, looked up by id, of the objects whose upper
// bound still reaches phase 2's k-th best lower bound. report.details()["tput"] gives the entries,
// objects and lookups of each phase.
struct ListsTopkOptions {
  // Between phases 1 and 2, look up the scores phase 1's objects lack (at most k x lists x lists
  // lookups): tau1 is then the k-th best exact score, not partial sum, and phase 2 sends fewer
  // entries. Off: TPUT as published.
  bool exact_phase1_scores{true};
};
TopkResult topk_distributed_lists(const Context& ctx, const topk::Lists& my_lists,
                                  std::span<const std::uint32_t> my_list_indices, std::uint32_t total_lists,
                                  std::uint64_t k, const topk::Aggregate& agg = {}, const ListsTopkOptions& opts = {});

}  // namespace tandem::dist
