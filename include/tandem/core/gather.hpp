// out[j] = in[rows[j]] on every core, each load asked for some rows ahead: the rows of a sort's
// order are random, so the hardware cannot guess the next address, and some tens of misses in
// flight per core keep the memory busy. The rows must lie in [0, size of in).
#pragma once
#include <cstddef>

namespace tandem {

template <class T, class Index>
void gather_prefetched(const T* in, const Index* rows, std::size_t k, T* out, int threads) {
  constexpr std::size_t kAhead = 16;
#pragma omp parallel for num_threads(threads) schedule(static) if (k > (std::size_t{1} << 15))
  for (std::size_t j = 0; j < k; ++j) {
    if (j + kAhead < k) __builtin_prefetch(in + rows[j + kAhead]);
    out[j] = in[rows[j]];
  }
}

}  // namespace tandem
