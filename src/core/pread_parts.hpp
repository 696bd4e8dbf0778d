// A byte range of a regular file read by several threads at once with pread (the page cache's
// copy on one thread, some 6 GB/s, caps a read on many cores): io.cpp's sized inputs and the CSV
// scan's reader (scan/source.cpp). The threads are an OpenMP team (one big read) or a reader's own
// PreadPool (a read per buffer while other threads work: a team's threads would spin between the
// calls on the cores those threads use, and a thread started per call costs its start).
#pragma once
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tandem::io {

// The file read: its descriptor, its name for messages, and the file offset that byte 0 of the
// reads stands for (an input that starts part-way into its file).
struct PreadFile {
  int fd;
  const std::string& name;
  std::uint64_t origin{0};
};

// Helper threads started once and asleep in a condition variable between calls. One caller at a
// time.
class PreadPool {
 public:
  explicit PreadPool(int helpers);  // std::system_error where a thread cannot be started
  ~PreadPool();
  PreadPool(const PreadPool&) = delete;
  PreadPool& operator=(const PreadPool&) = delete;

  int helpers() const { return static_cast<int>(threads_.size()); }
  // Runs job() on the calling thread and on up to `helpers` helpers; returns once every run has.
  // Helpers still asleep when the caller's run ends are not waited for: job() must share its work
  // out (as pread_parts' pieces are), so that the caller alone finishes it. job() must not throw.
  void run(int helpers, const std::function<void()>& job);

 private:
  void serve();
  void stop();
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void()>* job_{nullptr};
  std::uint64_t call_{0};  // counts run()s: a helper joins each call at most once
  int open_{0};            // helpers the current call may still take
  int busy_{0};            // helpers in job() now
  bool stop_{false};
  std::vector<std::thread> threads_;
};

// Up to n bytes at byte `at` (one pread; 0 at the file's end): EINTR retried, a count the kernel
// refuses with ENOMEM halved (some /proc files). A failed read is an InputError
// "NAME: read failed at byte N (reason)".
std::size_t pread_some(const PreadFile& f, void* dst, std::size_t n, std::uint64_t at);

// Bytes [at, at + n) into dst, in pieces (detail::IoPieces) that `threads` threads read: `pool`'s
// helpers and the calling thread where a pool is given, else an OpenMP team. Returns n, or the
// byte where the file ended when it ended early (every byte before it read). A failed read throws
// pread_some's InputError, from whichever thread it happened on.
std::size_t pread_parts(const PreadFile& f, void* dst, std::size_t n, std::uint64_t at, int threads,
                        PreadPool* pool = nullptr);

}  // namespace tandem::io
