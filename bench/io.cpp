// Files at the I/O floor: tandem's reading and writing of array files (io::map_array, what the
// commands read regular files with, io::read_array for streams, and io::write_array) against the
// floor, measured in the same run on the same file with the same threads:
//   read floor   the file's bytes by parallel pread (one contiguous share per thread) into a
//                buffer already faulted in (allocated and touched once, before the timing);
//   write floor  a buffer by parallel pwrite into a new file (created, written, closed).
// The page cache is warm (the file is read once before anything is timed). tandem's read also
// allocates the buffer it returns, and its pages are faulted in by the read: the "read floor into
// fresh memory" line shows what that costs on its own. io::map_array (what read-only consumers
// use) maps the page cache's pages instead and fills the page tables before it returns.
//
// End to end: `tandem sort --device cpu` of the .npy file against read floor + write floor + the
// same in-memory sort (tandem::sort on the CPU, same threads). In process, the command's two ways
// to take its input and sort it: io::read_array + tandem::sort in place (inputs that cannot be
// mapped, and memory=low) against io::map_array + tandem::sort_copy, whose first pass reads the
// mapped pages (regular files).
//
// Each round runs the floors and tandem's calls one after the other, so that load from other
// processes falls on all of them alike; the lines are the medians over the rounds.
//
//   bench_io [--mib M] [--threads T] [--dir DIR] [--tandem PATH] [--no-sort] [--quick]
// M MiB of u32 keys (default 1024; --quick 64), in a folder of its own in DIR (default the
// temporary folder). T: thread counts, comma-separated (default "1,2" plus all cores when there
// are more). PATH: the tandem program (default: ../tandem beside this program's folder, as the
// build lays them out).
#include <fcntl.h>
#include <omp.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "harness.hpp"
#include "tandem/core/io.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/sort.hpp"

using namespace tandem;
namespace fs = std::filesystem;

namespace {

// The floor's split: thread t moves bytes [n*t/T, n*(t+1)/T) with one pread/pwrite loop.
template <class Call>
bool each_share(std::size_t n, int threads, Call&& call) {
  bool ok = true;
#pragma omp parallel num_threads(threads) reduction(&& : ok)
  {
    const std::size_t t = std::size_t(omp_get_thread_num()), T = std::size_t(omp_get_num_threads());
    std::size_t at = n * t / T;
    const std::size_t end = n * (t + 1) / T;
    while (at < end) {
      const ssize_t got = call(at, std::min<std::size_t>(end - at, std::size_t{1} << 30));
      if (got <= 0 && !(got < 0 && errno == EINTR)) {
        ok = false;
        break;
      }
      if (got > 0) at += std::size_t(got);
    }
  }
  return ok;
}

bool pread_floor(const std::string& path, char* p, std::size_t n, int threads) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok =
      each_share(n, threads, [&](std::size_t at, std::size_t k) { return ::pread(fd, p + at, k, off_t(at)); });
  ::close(fd);
  return ok;
}

bool pwrite_floor(const std::string& path, const char* p, std::size_t n, int threads) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  const bool ok =
      each_share(n, threads, [&](std::size_t at, std::size_t k) { return ::pwrite(fd, p + at, k, off_t(at)); });
  return ::close(fd) == 0 && ok;
}

// Runs argv, returns its exit status (-1 when it could not run). Spawned, not forked: a fork
// copies the page tables of this process's buffers (a gigabyte and more), and the time would count
// as the program's.
int run_program(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (::posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) return -1;
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Runs every f once per round, warmup + reps rounds, so that load from other processes falls on
// all of them alike; returns the statistics of each f's times.
std::vector<Stats> in_rounds(const bench::Bench& b, const std::vector<std::function<double()>>& fs) {
  std::vector<std::vector<double>> times(fs.size());
  for (int round = 0; round < b.warmup() + b.reps(); ++round)
    for (std::size_t i = 0; i < fs.size(); ++i) {
      const double t = fs[i]();
      if (round >= b.warmup()) times[i].push_back(t);
    }
  std::vector<Stats> out;
  for (auto& t : times) out.push_back(summarize(std::move(t)));
  return out;
}

// Newly mapped memory, whatever its size (malloc may hand back pages it kept): every page
// faults in when it is first written.
class FreshMemory {
 public:
  explicit FreshMemory(std::size_t n) : n_(std::max<std::size_t>(n, 1)) {
    void* p = ::mmap(nullptr, n_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    p_ = static_cast<char*>(p);
  }
  ~FreshMemory() { ::munmap(p_, n_); }
  FreshMemory(const FreshMemory&) = delete;
  FreshMemory& operator=(const FreshMemory&) = delete;
  char* get() const { return p_; }

 private:
  std::size_t n_;
  char* p_;
};

struct Floors {
  double read, write;
};

Floors file_lines(bench::Bench& b, const fs::path& dir, const std::vector<std::uint32_t>& keys, int threads) {
  const std::size_t bytes = keys.size() * 4;
  const std::string raw = (dir / "keys.u32").string(), npy = (dir / "keys.npy").string();
  const std::string out_floor = (dir / "floor.out").string(), out_npy = (dir / "out.npy").string();
  const std::size_t npy_bytes = fs::file_size(npy);  // the floors move the .npy file's bytes
  const std::string at = fmt::format("{} threads", threads);

  auto faulted = std::make_unique<char[]>(npy_bytes);
  std::memset(faulted.get(), 1, npy_bytes);
  const auto floor_read = [&](char* into) {
    Stopwatch w;
    if (!pread_floor(npy, into, npy_bytes, threads)) b.fail("the read floor's pread failed");
    return w.seconds();
  };
  // io::read_array of `path`; `same` says every call returned the keys.
  bool same_npy = true, same_raw = true;
  const auto tandem_read = [&](const std::string& path, bool& same) {
    Stopwatch w;
    const io::Array a = io::read_array(path, DType::u32, threads);
    const double s = w.seconds();
    same = same && a.bytes.size() == bytes && std::memcmp(a.bytes.data(), keys.data(), bytes) == 0;
    return s;
  };
  // io::map_array of `path`: the mapping made and its page tables filled (the unmapping, like the
  // freeing of read_array's buffer, is not timed). (It reads the file: tandem maps no input.)
  bool same_map_npy = true, same_map_raw = true;
  const auto tandem_map = [&](const std::string& path, bool& same) {
    Stopwatch w;
    const io::MappedArray a = io::map_array(path, DType::u32, threads);
    const double s = w.seconds();
    same = same && a.bytes() == bytes && std::memcmp(a.data, keys.data(), bytes) == 0;
    return s;
  };
  // Every timed write starts with no dirty pages (sync), and its file goes away after it (its
  // dirty pages with it): neither write pays for the write-back of the other's.
  bool written = true;
  const auto floor_write = [&] {
    ::sync();
    Stopwatch w;
    if (!pwrite_floor(out_floor, faulted.get(), npy_bytes, threads)) b.fail("the write floor's pwrite failed");
    const double s = w.seconds();
    fs::remove(out_floor);
    return s;
  };
  const auto tandem_write = [&] {
    ::sync();
    Stopwatch w;
    io::write_array(out_npy, DType::u32, keys.data(), keys.size(), threads);
    const double s = w.seconds();
    const io::Array back = io::read_array(out_npy, DType::u32, threads);
    written = written && back.bytes.size() == bytes && std::memcmp(back.bytes.data(), keys.data(), bytes) == 0;
    fs::remove(out_npy);
    return s;
  };
  const std::vector<Stats> st =
      in_rounds(b, {[&] { return floor_read(faulted.get()); }, [&] { return floor_read(FreshMemory(npy_bytes).get()); },
                    [&] { return tandem_read(npy, same_npy); }, [&] { return tandem_read(raw, same_raw); },
                    [&] { return tandem_map(npy, same_map_npy); }, [&] { return tandem_map(raw, same_map_raw); },
                    floor_write, tandem_write});
  const Stats &read_floor = st[0], &read_fresh = st[1], &read_npy = st[2], &read_raw = st[3];
  const Stats &map_npy = st[4], &map_raw = st[5], &write_floor = st[6], &write_npy = st[7];
  if (!same_npy || !same_raw) b.fail(fmt::format("io::read_array on {} returned other bytes than the file's", at));
  if (!same_map_npy || !same_map_raw)
    b.fail(fmt::format("io::map_array on {} returned other bytes than the file's", at));
  if (!written) b.fail(fmt::format("io::write_array on {} wrote other bytes", at));

  b.record("read", fmt::format("floor: parallel pread into faulted memory, {}", at), read_floor, double(npy_bytes), "B",
           true);
  b.record("read", fmt::format("floor into fresh memory (page faults included), {}", at), read_fresh, double(npy_bytes),
           "B", true);
  b.record("read", fmt::format("tandem io::read_array .npy, {}", at), read_npy, double(npy_bytes), "B", same_npy);
  b.record("read", fmt::format("tandem io::read_array raw, {}", at), read_raw, double(bytes), "B", same_raw);
  b.record("read", fmt::format("tandem io::map_array .npy, {}", at), map_npy, double(npy_bytes), "B", same_map_npy);
  b.record("read", fmt::format("tandem io::map_array raw, {}", at), map_raw, double(bytes), "B", same_map_raw);
  b.record("write", fmt::format("floor: parallel pwrite to a new file, {}", at), write_floor, double(npy_bytes), "B",
           true);
  b.record("write", fmt::format("tandem io::write_array .npy, {}", at), write_npy, double(npy_bytes), "B", written);
  b.info(fmt::format("page faults: read floor into fresh / faulted memory, {}", at),
         read_fresh.median / read_floor.median, "x");
  b.info(fmt::format("read .npy vs the floor into fresh memory, {}", at), read_npy.median / read_fresh.median, "x");
  // Commands map regular files (the sort too, since it sorts into new memory from the mapping);
  // read_array serves standard input, streams and the sort's memory=low, so its ratio is shown
  // beside the goal, not as one.
  b.info(fmt::format("read .npy into memory (streams, sort memory=low) vs parallel pread floor, {}", at),
         read_npy.median / read_floor.median, "x");
  b.info(fmt::format("read raw into memory vs parallel pread floor, {}", at), read_raw.median / read_floor.median, "x");
  b.goal(fmt::format("map .npy vs parallel pread floor, {}", at), map_npy.median / read_floor.median, 1.2, false);
  b.goal(fmt::format("map raw vs parallel pread floor, {}", at), map_raw.median / read_floor.median, 1.2, false);
  b.goal(fmt::format("write .npy vs parallel pwrite floor, {}", at), write_npy.median / write_floor.median, 1.2, false);
  return {read_floor.median, write_floor.median};
}

void sort_lines(bench::Bench& b, const fs::path& dir, const std::string& tandem_path,
                const std::vector<std::uint32_t>& keys, int threads, const Floors& floor) {
  const std::string at = fmt::format("{} threads", threads);
  std::vector<std::uint32_t> want = keys, work;
  std::sort(want.begin(), want.end());
  SortOptions o;
  o.device = Device::cpu;
  o.threads = threads;
  bool sorted = true;
  const auto in_memory = [&] {
    work = keys;
    Stopwatch w;
    sort(std::span<std::uint32_t>(work), o);
    const double s = w.seconds();
    sorted = sorted && work == want;
    work = {};
    return s;
  };
  const std::string in = (dir / "keys.npy").string(), out = (dir / "sorted.npy").string();
  // The command's input and sort in process, both ways: read into memory and sorted there, or
  // mapped and sorted into new memory by a first pass that reads the mapping (what it does now).
  bool read_sorted = true, map_sorted = true;
  const auto read_then_sort = [&] {
    Stopwatch w;
    io::Array a = io::read_array(in, DType::u32, threads);
    sort(a.as<std::uint32_t>(), o);
    const double s = w.seconds();
    read_sorted = read_sorted && a.bytes.size() == want.size() * 4 &&
                  std::memcmp(a.bytes.data(), want.data(), a.bytes.size()) == 0;
    return s;
  };
  const auto map_then_sort_copy = [&] {
    Stopwatch w;
    const io::MappedArray m = io::map_array(in, DType::u32, threads);
    io::ByteBuffer sorted_bytes(m.bytes());
    const std::span<std::uint32_t> dst(reinterpret_cast<std::uint32_t*>(sorted_bytes.data()), m.count);
    sort_copy(m.as<std::uint32_t>(), dst, o);
    const double s = w.seconds();
    map_sorted = map_sorted && sorted_bytes.size() == want.size() * 4 &&
                 std::memcmp(sorted_bytes.data(), want.data(), sorted_bytes.size()) == 0;
    return s;
  };
  const std::vector<std::string> args = {tandem_path, "sort", "--type",   "u32", "--in",      in,
                                         "--out",     out,    "--device", "cpu", "--threads", std::to_string(threads)};
  bool ran = true;
  const auto cli = [&] {
    fs::remove(out);
    ::sync();  // as the write floor: no dirty pages from before
    Stopwatch w;
    ran = ran && run_program(args) == 0;
    return w.seconds();
  };
  const std::vector<Stats> st = in_rounds(b, {in_memory, cli, read_then_sort, map_then_sort_copy});
  const io::Array got = ran ? io::read_array(out, DType::u32, threads) : io::Array{};
  const bool same =
      got.bytes.size() == want.size() * 4 && std::memcmp(got.bytes.data(), want.data(), got.bytes.size()) == 0;
  fs::remove(out);
  if (!sorted || !same || !read_sorted || !map_sorted)
    b.fail(fmt::format("the sort on {} gave another order than std::sort", at));
  b.record("sort", fmt::format("in process: io::read_array + tandem::sort in place, {}", at), st[2],
           double(keys.size()), "keys", read_sorted);
  b.record("sort", fmt::format("in process: io::map_array + tandem::sort_copy, {}", at), st[3], double(keys.size()),
           "keys", map_sorted);
  b.info(fmt::format("mapped input + sorted copy vs read + sort in place, {}", at), st[3].median / st[2].median, "x");
  b.record("sort", fmt::format("in memory, tandem::sort cpu, {}", at), st[0], double(keys.size()), "keys", sorted);
  b.record("sort", fmt::format("end to end: tandem sort --in .npy --out .npy, {}", at), st[1], double(keys.size()),
           "keys", same);
  const double floor_s = floor.read + floor.write + st[0].median;
  b.info(fmt::format("sort floor: read + write floors + in-memory sort, {}", at), floor_s * 1e3, "ms");
  b.goal(fmt::format("tandem sort file to file vs read + write + sort floor, {}", at), st[1].median / floor_s, 1.3,
         false);
}

}  // namespace

int main(int argc, char** argv) {
  bench::Bench b("io", argc, argv);
  const std::size_t mib = std::size_t(b.get_int("--mib", b.quick() ? 64 : 1024));
  // A folder of this run's own: runs side by side do not share files.
  const fs::path dir =
      fs::path(b.get("--dir", fs::temp_directory_path().string())) / fmt::format("bench_io.{}", ::getpid());
  fs::create_directories(dir);
  const std::string tandem_path =
      b.get("--tandem", (fs::canonical("/proc/self/exe").parent_path().parent_path() / "tandem").string());
  const bool with_sort = !b.has_flag("--no-sort");
  const int all = default_threads();
  const std::vector<int> counts = b.get_threads("--threads", all > 2 ? fmt::format("1,2,{}", all) : "1,2");

  std::vector<std::uint32_t> keys((mib << 20) / 4);
#pragma omp parallel for
  for (std::size_t i = 0; i < keys.size(); ++i) {
    std::uint64_t z = (i + 1) * 0x9e3779b97f4a7c15ull;  // splitmix64: random keys, any thread count
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    keys[i] = std::uint32_t(z ^ (z >> 31));
  }
  const std::string raw = (dir / "keys.u32").string(), npy = (dir / "keys.npy").string();
  io::write_array(raw, DType::u32, keys.data(), keys.size());
  io::write_array(npy, DType::u32, keys.data(), keys.size());
  (void)io::read_bytes(raw), (void)io::read_bytes(npy);  // the page cache is warm from here on
  b.info(fmt::format("file: {} u32 keys in {}", keys.size(), dir.string()), double(keys.size() * 4) / double(1 << 20),
         "MiB");

  for (int threads : counts) {
    const Floors floor = file_lines(b, dir, keys, threads);
    if (with_sort) sort_lines(b, dir, tandem_path, keys, threads, floor);
  }
  fs::remove_all(dir);
  return b.finish();
}
