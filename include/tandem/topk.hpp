// tandem::topk: the k best objects under a monotone aggregate of n ranked lists.
//
// Input: n lists (1 <= n <= 64) over m objects; each list holds the (id, score) pairs of all m
// objects sorted by score descending. Output: the k best objects with their exact aggregate scores,
// best first, ties broken by the smaller id - the same answer on every path.
//
// Paths: NRA (no random access; batches of STRIDE levels, the paper's phase 1 / phase 2) on the CPU
// (1 thread = the paper's baseline, or many) and on the GPU; TA (Fagin's threshold algorithm, random
// access through a per-list id -> score index); the full scan (aggregate every object, then select).
// Algo::auto_ estimates the lists' correlation from a short prefix and runs NRA with a depth budget,
// falling back to the scan (see docs/topk.md).
//
// File format (little-endian): "TKL1", u32 n, u64 m, then n lists of m (u32 id, f32 score) entries.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tandem/core/report.hpp"
#include "tandem/core/types.hpp"
#include "tandem/core/uninit_allocator.hpp"

namespace tandem::topk {

constexpr std::uint32_t kMaxLists = 64;

struct Entry {
  std::uint32_t id;
  float score;
};
static_assert(sizeof(Entry) == 8, "Entry must be 8 bytes (the file's layout)");

// n lists of m entries each, one after another.
struct Lists {
  std::uint32_t n{0};  // lists
  std::uint64_t m{0};  // objects
  // n lists of m entries, one after another. resize() leaves new entries uninitialised (every
  // reader and generator fills them all), on huge pages from 2 MiB: no zero-fill pass.
  std::vector<Entry, UninitAllocator<Entry>> entries;
  std::span<const Entry> list(std::uint32_t i) const { return {entries.data() + std::size_t(i) * m, m}; }
};

// Throws InputError naming the list and position: a list not sorted descending, an id >= m, a
// duplicated (hence some missing) id, a NaN or infinite score, n outside 1..64, m >= 2^32.
void validate(const Lists& lists);
// Reads and validates a TKL1 file ("-" for standard input). InputError for a wrong magic, a
// truncated file (naming the list and position where the data ends) or trailing bytes.
Lists read_lists(const std::string& path);
// Writes a TKL1 file atomically ("-" for standard output).
void write_lists(const std::string& path, const Lists& lists);

// ---- generators (deterministic for a seed, whatever the thread count) ----
enum class Dist { uniform, correlated, anticorrelated, zipf };
Dist parse_dist(std::string_view name);  // UsageError naming the bad value
std::string_view to_string(Dist d);

struct GenOptions {
  std::uint64_t objects{1000};
  std::uint32_t lists{4};
  Dist dist{Dist::uniform};
  std::uint64_t seed{1};
  int threads{0};  // 0: default_threads()
};
// Scores are multiples of 2^-24 in [0, 1), so sums of up to 64 of them are exact in double.
Lists generate(const GenOptions& o);

// ---- aggregates (all monotone) ----
// How an object's scores across the lists combine into one (not a group-by aggregation).
enum class ScoreCombine { sum, wsum, min, max };

struct Aggregate {
  ScoreCombine kind{ScoreCombine::sum};
  std::vector<double> weights;  // wsum: one finite weight >= 0 per list

  // "sum", "wsum:w1,w2,...", "min", "max"; UsageError for anything else, a weight count different
  // from `lists`, or a negative / non-finite weight (the aggregate would not be monotone).
  static Aggregate parse(std::string_view text, std::uint32_t lists);
  std::string to_string() const;
  void check(std::uint32_t lists) const;  // UsageError if unusable with `lists` lists
};

// ---- query ----
enum class Algo { auto_, nra, ta, scan };
Algo parse_algo(std::string_view name);
std::string_view to_string(Algo a);

enum class Memory { device, managed };
Memory parse_memory(std::string_view name);
std::string_view to_string(Memory m);

struct Options {
  Algo algo{Algo::auto_};
  Device device{Device::auto_};
  std::uint64_t stride{0};        // levels per batch (NRA, TA); 0: adaptive (geometric growth)
  Memory memory{Memory::device};  // where the GPU keeps the lists: device or managed memory
  int threads{0};                 // CPU threads; 0: default_threads(). NRA with 1 = the paper's baseline
  std::uint64_t max_depth{0};     // NRA/TA give up (finished = false) past this depth; 0: no cap
};

struct Item {
  std::uint32_t id;
  double score;
  bool operator==(const Item&) const = default;
};

// What an algorithm did; also written into the Report's details.
struct Stats {
  std::string algo;                  // "nra", "ta", "scan"
  std::string where;                 // "cpu", "cpu x8", "gpu0"
  std::vector<std::uint64_t> depth;  // entries read per list (NRA/TA; m for the scan)
  std::uint64_t candidates{0};       // NRA: most candidates held; TA: objects scored
  std::uint64_t rounds{0};           // batches (NRA/TA), select passes (scan)
  std::uint64_t stride{0};           // first batch size (0: none)
  bool adaptive{false};
  bool finished{true};        // false: stopped at max_depth without an answer
  double mean_depth() const;  // entries read, averaged over the lists
};

struct Result {
  std::vector<Item> items;  // best first; empty when !stats.finished
  Stats stats;
  Report report;
};

// The whole query: validates k (1 <= k <= m, else UsageError) and the aggregate, picks the path
// and the device. device=auto falls back to the CPU (with a note) when no GPU is usable or GPU
// memory runs out; device=gpu throws instead.
Result query(const Lists& lists, std::uint64_t k, const Aggregate& agg = {}, const Options& opts = {});

// Brute force, single-threaded, obviously correct: the oracle for tests and benchmarks.
std::vector<Item> reference(const Lists& lists, std::uint64_t k, const Aggregate& agg = {});

// True when a ranks before b: higher score, then smaller id.
inline bool better(const Item& a, const Item& b) { return a.score > b.score || (a.score == b.score && a.id < b.id); }

// ---- individual CPU paths (query() calls these; k and agg must already be valid) ----
Result nra_cpu(const Lists& lists, std::uint64_t k, const Aggregate& agg, const Options& opts);
Result scan_cpu(const Lists& lists, std::uint64_t k, const Aggregate& agg, const Options& opts);

// TA's random-access index: score_by_id[i * m + id]. Building it reads every list once.
struct TaIndex {
  std::uint64_t m{0};
  std::vector<float> score_by_id;
};
TaIndex build_ta_index(const Lists& lists, int threads = 0);
// Builds the index itself when `index` is null (and reports the build as its own stage).
Result ta_cpu(const Lists& lists, std::uint64_t k, const Aggregate& agg, const Options& opts,
              const TaIndex* index = nullptr);

// Estimate used by Algo::auto_: the overlap of the lists' prefixes against independence.
struct Estimate {
  std::uint64_t prefix{0};  // entries of each list looked at
  double observed{0};       // pairs (object, two lists) seen together in the prefixes
  double expected{0};       // the same under independent lists
  double ratio() const { return expected > 0 ? observed / expected : 1.0; }
};
Estimate estimate_overlap(const Lists& lists);

// ---- GPU paths ----
// Lists resident on the GPU plus reusable work buffers. Only usable in CUDA builds; upload()
// throws NoDeviceError otherwise. Managed memory is requested only when cudaMemGetInfo says
// that much is free (OutOfMemoryError otherwise).
namespace detail {
struct DeviceListsAccess;  // the GPU paths' way to the state (src/topk/internal.hpp)
}
class DeviceLists {
 public:
  struct Impl;
  explicit DeviceLists(std::unique_ptr<Impl> impl);
  ~DeviceLists();
  DeviceLists(const DeviceLists&) = delete;
  DeviceLists& operator=(const DeviceLists&) = delete;
  std::uint32_t n() const;
  std::uint64_t m() const;
  Memory memory() const;
  // The lists' prefix overlap, measured once at upload: what Algo::auto_ decides by.
  Estimate overlap() const;
  // Whether the lists are also held by object id (built by the first scan or TA query): the scan is
  // then one pass over n x m floats, and Algo::auto_ takes it.
  bool indexed() const;

 private:
  friend struct detail::DeviceListsAccess;
  std::unique_ptr<Impl> impl_;
};

std::unique_ptr<DeviceLists> upload(const Lists& lists, Memory memory = Memory::device, Report* report = nullptr);
Result nra_gpu(DeviceLists& d, std::uint64_t k, const Aggregate& agg, const Options& opts);
Result ta_gpu(DeviceLists& d, std::uint64_t k, const Aggregate& agg, const Options& opts);    // builds the index once
Result scan_gpu(DeviceLists& d, std::uint64_t k, const Aggregate& agg, const Options& opts);  // builds the index once
// The whole query on lists already on the GPU (many queries over one upload): the same checks and
// plan as query() above, Algo::auto_ deciding by d.overlap(); opts.device and opts.memory do not
// apply.
Result query(DeviceLists& d, std::uint64_t k, const Aggregate& agg = {}, const Options& opts = {});

}  // namespace tandem::topk
