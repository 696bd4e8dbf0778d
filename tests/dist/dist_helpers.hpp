// What the distributed tests share: one context for the whole program, gathering every rank's
// data, and this rank's slice of a global order.
#pragma once
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include <mpi.h>

#include "tandem/dist.hpp"
#include "tandem/sort.hpp"

namespace tandem::dist::test {

inline Context& context() {
  static Context ctx(MPI_COMM_WORLD);
  return ctx;
}

// Every rank's vector, back to back in rank order (on every rank).
template <class T>
std::vector<T> gather_all(const std::vector<T>& mine, MPI_Comm comm) {
  int p = 0;
  MPI_Comm_size(comm, &p);
  int bytes = int(mine.size() * sizeof(T));
  std::vector<int> sizes(static_cast<std::size_t>(p)), at(static_cast<std::size_t>(p), 0);
  MPI_Allgather(&bytes, 1, MPI_INT, sizes.data(), 1, MPI_INT, comm);
  int total = 0;
  for (int r = 0; r < p; ++r) {
    at[r] = total;
    total += sizes[r];
  }
  std::vector<T> all(std::size_t(total) / sizeof(T));
  MPI_Allgatherv(mine.data(), bytes, MPI_BYTE, all.data(), sizes.data(), at.data(), MPI_BYTE, comm);
  return all;
}

// Sort options for the CPU in the given direction.
inline SortOptions cpu_sort_options(bool descending) {
  SortOptions opts;
  opts.descending = descending;
  opts.device = Device::cpu;
  return opts;
}

// Every rank's keys together, sorted by one process: what the ranks' parts must add up to.
template <class K>
std::vector<K> sorted_whole(const std::vector<K>& mine, bool descending) {
  std::vector<K> all = gather_all(mine, MPI_COMM_WORLD);
  tandem::sort(std::span<K>(all), cpu_sort_options(descending));
  return all;
}

// The first position of this rank's slice and its length when n elements are split evenly.
inline std::pair<std::size_t, std::size_t> even_slice(std::size_t n, int rank, int size) {
  const std::size_t b = std::size_t((unsigned __int128)n * std::size_t(rank) / std::size_t(size));
  const std::size_t e = std::size_t((unsigned __int128)n * std::size_t(rank + 1) / std::size_t(size));
  return {b, e - b};
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

}  // namespace tandem::dist::test
