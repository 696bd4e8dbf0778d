// CPU parallelism helpers on OpenMP.
//
// An exception must not leave an OpenMP region (the runtime calls std::terminate). Parallel work
// that can throw, an allocation included, runs through parallel_for / parallel_region, which catch
// the first exception a thread raises, let the other threads skip their remaining work, and
// rethrow it on the calling thread after the region ends.
#pragma once
#ifdef _OPENMP
#include <omp.h>
#endif

#include <atomic>
#include <cstddef>
#include <exception>
#include <utility>

namespace tandem {

// Threads tandem uses by default: the physical cores (hwloc), or TANDEM_THREADS when set.
// TANDEM_THREADS must be an integer in [1, kMaxThreads]; otherwise UsageError naming it.
int default_threads();

// The most threads an option or TANDEM_THREADS may ask for.
inline constexpr int kMaxThreads = 4096;

// Checks TANDEM_THREADS as default_threads() does (UsageError naming it), without asking for the
// machine's cores: for a caller that wants a bad value reported before any work.
void check_thread_environment();

// memcpy split into `threads` contiguous pieces (threads <= 0: default_threads()).
void parallel_copy(void* dst, const void* src, std::size_t bytes, int threads = 0);

// Keeps the first exception thrown by any thread of a parallel region for the calling thread.
class FirstException {
 public:
  // Runs f() unless an earlier call failed; an exception it throws is kept, not propagated.
  template <class F>
  void run(F&& f) noexcept {
    if (failed()) return;
    try {
      std::forward<F>(f)();
    } catch (...) {
      keep();
    }
  }
  bool failed() const noexcept { return failed_.load(std::memory_order_relaxed); }
  // After the region: rethrows the kept exception, if any.
  void rethrow() const {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  void keep() noexcept {
    if (!claimed_.exchange(true)) error_ = std::current_exception();
    failed_.store(true, std::memory_order_relaxed);
  }
  std::atomic<bool> claimed_{false};
  std::atomic<bool> failed_{false};
  std::exception_ptr error_;
};

// body(i) for i in [0, n) on `threads` threads (<= 0: default_threads()), one index at a time
// handed out dynamically. The first exception a body throws is rethrown here once every thread
// stopped; bodies not yet begun by then are skipped.
template <class Body>
void parallel_for(std::size_t n, int threads, Body&& body) {
  if (threads <= 0) threads = default_threads();
  if (threads == 1 || n <= 1) {
    for (std::size_t i = 0; i < n; ++i) body(i);
    return;
  }
  FirstException first;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (std::size_t i = 0; i < n; ++i) first.run([&] { body(i); });
  first.rethrow();
}

// body(state, i) for i in [0, n) on `threads` threads (<= 0: default_threads()), each thread's
// `state` made once by make_state() (scratch buffers, say) before it takes its first index.
// Indices are claimed one at a time from a counter; the first exception (make_state's included)
// is rethrown here once every thread stopped.
template <class MakeState, class Body>
void parallel_for_with(std::size_t n, int threads, MakeState&& make_state, Body&& body) {
  if (threads <= 0) threads = default_threads();
  FirstException first;
  std::atomic<std::size_t> next{0};
#pragma omp parallel num_threads(threads)
  first.run([&] {
    std::size_t i = next++;
    if (i >= n) return;  // no work left for this thread: no state made
    auto state = make_state();
    for (; i < n && !first.failed(); i = next++) body(state, i);
  });
  first.rethrow();
}

// body(thread, threads) once on each of `threads` threads (<= 0: default_threads()), as an
// `omp parallel` region would; the first exception is rethrown after all returned. A body that
// waits at a barrier must not throw before it (or every thread must pass the barrier anyway).
template <class Body>
void parallel_region(int threads, Body&& body) {
  if (threads <= 0) threads = default_threads();
  FirstException first;
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
  first.run([&] { body(omp_get_thread_num(), omp_get_num_threads()); });
#else
  first.run([&] { body(0, 1); });  // a translation unit built without OpenMP (CUDA's): one thread
#endif
  first.rethrow();
}

}  // namespace tandem
