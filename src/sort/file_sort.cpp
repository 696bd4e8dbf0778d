// tandem::sort_files: array files sorted within a memory limit (file_sort_plan.hpp): pieces read
// at their offsets, sorted in memory by tandem::sort, written as runs to one scratch file, then
// merged in rounds. Each round refills every run's window, merges what can go out now and appends
// it to the outputs. What can go out: take the run whose window ends lowest, (key, run) in the
// order of a stable merge, among runs with elements still on disk; everything up to that bound
// is in memory (every other such run's window ends above it), so the windows' elements at or
// below it are merged and written, the whole of that run's window included.
#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "core/scratch_pool.hpp"
#include "sort/file_sort_plan.hpp"
#include "sort/merge_runs.hpp"
#include "sort/temp_file.hpp"
#include "tandem/core/device.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/format.hpp"
#include "tandem/core/io.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/sort.hpp"

namespace tandem {
namespace {

template <class T>
using Buffer = std::vector<T, UninitAllocator<T>>;

// The input files, open, and where their elements lie.
struct Inputs {
  io::SizedFile keys;
  std::optional<io::SizedFile> values;
  io::ArrayExtent key_extent, value_extent;
};

// The two outputs, checked before anything is read.
struct Outputs {
  io::AtomicOutput keys;
  std::optional<io::AtomicOutput> values;
  void commit() {
    if (values) io::AtomicOutput::commit_all({&keys, &*values});
    else keys.commit();
  }
};

// A sorted run on the scratch file: `count` keys from key_at, their values from value_at.
struct Run {
  std::uint64_t key_at{0}, value_at{0}, count{0};
};

// A run in the merge: its window of memory, what the window holds and what of it went out, and
// how much of the run is still on disk.
template <class K, class V>
struct Window {
  K* keys{nullptr};
  V* values{nullptr};
  std::size_t held{0}, taken{0};
  std::uint64_t next{0};  // the run's next element on disk
};

template <class K, class V>
class RunSorter {
 public:
  RunSorter(const SortFiles& f, const SortOptions& o, Inputs& in, Outputs& out, int threads)
      : f_(f), opts_(o), progress_(o.progress), in_(in), out_(out), threads_(threads), pairs_(in.values.has_value()) {
    opts_.progress = nullptr;  // the pieces' sorts are one step each of this one
  }

  void run(const detail::FileSortPlan& plan, const std::string& temp_dir, Report& rep) {
    plan_ = plan;
    Stopwatch w;
    if (plan.runs == 1) {
      write_headers();
      sort_whole(rep);
      rep.add("sort in memory", "cpu", w.seconds(), fmt::format("{} elements in one piece", plan.elements));
      return;
    }
    detail::TempFile scratch(detail::temp_parent(temp_dir));
    write_runs(scratch, rep);
    rep.add("sorted runs", "cpu", w.seconds(),
            fmt::format("{} runs of up to {} elements, {} to {}", plan.runs, plan.piece_elements,
                        human_bytes(scratch_bytes_), scratch.folder()));
    w.reset();
    write_headers();  // the outputs are made once the runs are (a signal before leaves no file)
    const std::size_t rounds = merge(scratch);
    rep.add("merge", "cpu", w.seconds(),
            fmt::format("{} runs through windows of {} elements, {} rounds", plan.runs, plan.window_elements, rounds));
  }

 private:
  void write_headers() {
    io::write_array_header(out_.keys, f_.key_type, plan_.elements);
    if (pairs_) io::write_array_header(*out_.values, f_.value_type, plan_.elements);
  }
  std::size_t element_bytes() const { return sizeof(K) + (pairs_ ? sizeof(V) : 0); }
  detail::KeyOrder<K> order() const {
    return {opts_.descending ? std::numeric_limits<typename detail::KeyOrder<K>::U>::max() : 0};
  }
  void progress(const std::string& line) const {
    if (progress_) progress_(line);
  }

  // Piece p's elements [begin, begin + m) read into the piece buffers and sorted there.
  std::size_t read_sorted_piece(std::size_t p, Report& rep) {
    const std::uint64_t n = plan_.elements;
    const std::uint64_t begin = n * p / plan_.runs, end = n * (p + 1) / plan_.runs;
    const auto m = std::size_t(end - begin);
    in_.keys.read(keys_.data(), m * sizeof(K), in_.key_extent.data_offset + begin * sizeof(K), threads_);
    if (pairs_)
      in_.values->read(values_.data(), m * sizeof(V), in_.value_extent.data_offset + begin * sizeof(V), threads_);
    const Report s = pairs_ ? sort_pairs(std::span<K>(keys_.data(), m), std::span<V>(values_.data(), m), opts_)
                            : sort(std::span<K>(keys_.data(), m), opts_);
    if (p == 0) {
      for (const auto& note : s.notes) rep.note("each piece: " + note);
      for (const auto& notice : s.notices) rep.notice(notice);
    }
    return m;
  }

  void sort_whole(Report& rep) {
    keys_.resize(plan_.piece_elements);
    if (pairs_) values_.resize(plan_.piece_elements);
    const std::size_t m = read_sorted_piece(0, rep);
    append(keys_.data(), values_.data(), m);
  }

  void write_runs(detail::TempFile& scratch, Report& rep) {
    keys_.resize(plan_.piece_elements);
    if (pairs_) values_.resize(plan_.piece_elements);
    for (std::size_t p = 0; p < plan_.runs; ++p) {
      progress(fmt::format("sorting piece {} of {}", p + 1, plan_.runs));
      const std::size_t m = read_sorted_piece(p, rep);
      Run r{scratch_bytes_, scratch_bytes_ + m * sizeof(K), m};
      scratch.write_at(keys_.data(), m * sizeof(K), r.key_at);
      if (pairs_) scratch.write_at(values_.data(), m * sizeof(V), r.value_at);
      scratch_bytes_ += m * element_bytes();
      runs_.push_back(r);
    }
    keys_ = Buffer<K>();  // the merge takes the memory (`= {}` would keep the capacity)
    values_ = Buffer<V>();
    release_cached_scratch();  // and the pieces' sorts' scratch, which the pool would keep beside it
  }

  // Moves what the window kept to its front and fills the rest from the run's file.
  void refill(const detail::TempFile& scratch, Window<K, V>& w, const Run& r) const {
    const std::size_t kept = w.held - w.taken;
    std::memmove(w.keys, w.keys + w.taken, kept * sizeof(K));
    if (pairs_) std::memmove(w.values, w.values + w.taken, kept * sizeof(V));
    const auto more = std::size_t(std::min<std::uint64_t>(plan_.window_elements - kept, r.count - w.next));
    scratch.read_at(w.keys + kept, more * sizeof(K), r.key_at + w.next * sizeof(K));
    if (pairs_) scratch.read_at(w.values + kept, more * sizeof(V), r.value_at + w.next * sizeof(V));
    w.next += more;
    w.held = kept + more;
    w.taken = 0;
  }

  std::size_t merge(const detail::TempFile& scratch) {
    const std::size_t runs = runs_.size(), width = plan_.window_elements;
    Buffer<K> window_keys(runs * width), out_keys(runs * width);
    Buffer<V> window_values(pairs_ ? runs * width : 0), out_values(pairs_ ? runs * width : 0);
    std::vector<Window<K, V>> w(runs);
    for (std::size_t r = 0; r < runs; ++r)
      w[r] = {window_keys.data() + r * width, pairs_ ? window_values.data() + r * width : nullptr, 0, 0, 0};
    const auto less = order();
    std::size_t rounds = 0;
    std::uint64_t written = 0;
    for (;; ++rounds) {
      parallel_for(runs, threads_, [&](std::size_t r) { refill(scratch, w[r], runs_[r]); });
      // The bound: the lowest (last key of the window, run) among runs with elements on disk.
      std::size_t bound = runs;
      for (std::size_t r = 0; r < runs; ++r)
        if (w[r].next < runs_[r].count &&
            (bound == runs || less(w[r].keys[w[r].held - 1], w[bound].keys[w[bound].held - 1])))
          bound = r;
      std::vector<std::span<const K>> key_runs(runs);
      std::vector<const V*> value_runs(runs);
      std::size_t total = 0;
      for (std::size_t r = 0; r < runs; ++r) {
        const K* first = w[r].keys;
        const K* last = first + w[r].held;
        std::size_t take = w[r].held;
        if (bound != runs) {  // equal keys of later runs wait for the bound run's
          const K b = w[bound].keys[w[bound].held - 1];
          take = std::size_t(
              (r <= bound ? std::upper_bound(first, last, b, less) : std::lower_bound(first, last, b, less)) - first);
        }
        key_runs[r] = {first, take};
        value_runs[r] = w[r].values;
        w[r].taken = take;
        total += take;
      }
      if (total == 0) break;  // every run drained
      detail::merge_spans(std::move(key_runs), std::move(value_runs), out_keys.data(),
                          pairs_ ? out_values.data() : nullptr, less, threads_);
      append(out_keys.data(), out_values.data(), total);
      written += total;
      progress(fmt::format("merged {} of {} elements", written, plan_.elements));
    }
    return rounds;
  }

  void append(const K* keys, const V* values, std::size_t m) {
    out_.keys.write(keys, m * sizeof(K), threads_);
    if (pairs_) out_.values->write(values, m * sizeof(V), threads_);
  }

  const SortFiles& f_;
  SortOptions opts_;
  std::function<void(std::string_view)> progress_;
  Inputs& in_;
  Outputs& out_;
  int threads_;
  bool pairs_;
  detail::FileSortPlan plan_;
  Buffer<K> keys_;
  Buffer<V> values_;
  std::vector<Run> runs_;
  std::uint64_t scratch_bytes_{0};
};

// The key types tandem::sort takes.
template <class K>
constexpr bool kSortKey =
    std::is_same_v<K, std::uint32_t> || std::is_same_v<K, std::int32_t> || std::is_same_v<K, std::uint64_t> ||
    std::is_same_v<K, std::int64_t> || std::is_same_v<K, float> || std::is_same_v<K, double>;

template <class K>
Report sort_files_as(const SortFiles& f, const SortOptions& opts, const FileSortLimits& limits) {
  const bool pairs = !f.values.empty();
  const int threads = opts.threads > 0 ? opts.threads : default_threads();
  Outputs out{io::AtomicOutput(f.keys_out), std::nullopt};
  if (pairs) {
    out.values.emplace(f.values_out);
    if (out.keys.same_destination(*out.values))
      throw UsageError(fmt::format("keys_out and values_out name the same destination ({})", f.keys_out));
  }
  Inputs in{io::SizedFile(f.keys), std::nullopt, io::array_extent(f.keys, f.key_type), {}};
  if (pairs) {
    in.values.emplace(f.values);
    in.value_extent = io::array_extent(f.values, f.value_type);
    if (in.value_extent.count != in.key_extent.count)
      throw InputError(
          fmt::format("{}: {} values for {} keys in {}", f.values, in.value_extent.count, in.key_extent.count, f.keys));
  }
  const std::size_t limit = memory_limit_or_share(limits.memory_limit, 2);
  Report rep;
  rep.operation = pairs ? "sort_pairs files" : "sort files";
  auto sort_with = [&](auto value_tag) {
    using V = decltype(value_tag);
    const std::size_t element_bytes = sizeof(K) + (pairs ? sizeof(V) : 0);
    const auto plan = detail::plan_file_sort(in.key_extent.count, element_bytes, limit);
    rep.note(fmt::format("memory limit {}: {}", human_bytes(limit),
                         plan.runs == 1 ? std::string("the input sorted whole in memory")
                                        : fmt::format("{} sorted runs merged in one pass", plan.runs)));
    RunSorter<K, V> sorter(f, opts, in, out, threads);
    sorter.run(plan, limits.temp_dir, rep);
  };
  if (pairs && f.value_type == DType::u64) sort_with(std::uint64_t{});
  else sort_with(std::uint32_t{});
  out.commit();
  if (opts.progress) opts.progress("");
  return rep;
}

}  // namespace

Report sort_files(const SortFiles& files, const SortOptions& opts, const FileSortLimits& limits) {
  if (files.keys.empty() || files.keys_out.empty()) throw UsageError("sort_files: keys and keys_out are required");
  if (files.values.empty() != files.values_out.empty())
    throw UsageError("sort_files: values and values_out go together");
  if (!files.values.empty() && files.value_type != DType::u32 && files.value_type != DType::u64)
    throw UsageError(fmt::format("sort_files: values must be u32 or u64 (got {})", to_string(files.value_type)));
  return visit_dtype(files.key_type, [&](auto tag) -> Report {
    using K = decltype(tag);
    if constexpr (kSortKey<K>) {
      return sort_files_as<K>(files, opts, limits);
    } else {
      throw UsageError(fmt::format("sort_files: keys of type {} are not sorted (u32, i32, u64, i64, f32, f64)",
                                   to_string(files.key_type)));
    }
  });
}

}  // namespace tandem
