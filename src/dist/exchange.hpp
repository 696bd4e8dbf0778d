// The all-to-all exchange of the distributed operations: each rank sends a block of bytes to
// every rank (itself included) and receives one from each, in rank order. Sizes are 64-bit: a
// block larger than MPI's int counts goes in pieces of 1 GiB.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "dist/context_impl.hpp"
#include "dist/receive_buffers.hpp"
#include "tandem/core/io.hpp"
#include "tandem/core/report.hpp"

namespace tandem::dist {

// Where an exchange's time went, summed over the exchanges of one operation: the all-to-all of
// the block sizes (and the agreement on the path), the receive buffer (allocation and page
// faults), and the data's all-to-all.
struct ExchangeTimes {
  double counts{0}, buffer{0}, data{0};
  std::vector<std::uint64_t> bytes_to, bytes_from;  // this rank's blocks, per peer (itself included)
};

// Adds the stages "exchange counts", "exchange buffer" and "exchange data" to the report, and the
// bytes per peer to details()["exchange"].
void add_exchange_stages(Report& report, const ExchangeTimes& times, const Traffic& traffic);

// send: the blocks for rank 0, 1, … back to back; counts[d]: bytes of the block for rank d.
// recv_counts gets the bytes received from each rank; allocate(total) gives the memory they land
// in, back to back in source-rank order. times, when given, gets the sub-stages' seconds added.
Traffic exchange_bytes(const Context::Impl& s, const std::byte* send, std::span<const std::uint64_t> counts,
                       std::vector<std::uint64_t>& recv_counts,
                       const std::function<std::byte*(std::uint64_t)>& allocate, ExchangeTimes* times = nullptr);

// What a typed exchange received: the elements from every rank, back to back in rank order, in a
// buffer of the context's, handed back to it when this ends.
template <class T>
struct Received {
  BufferLease buffer;
  std::vector<std::uint64_t> runs;  // elements from each rank
  std::uint64_t size{0};
  const T* data() const noexcept { return reinterpret_cast<const T*>(buffer.data()); }
};

// The typed exchanges' common part: counts and recv_counts in elements of T; allocate(bytes)
// gives the memory the blocks land in.
template <class T, class Allocate>
void exchange_elements(const Context::Impl& s, std::span<const T> send, std::span<const std::uint64_t> counts,
                       std::vector<std::uint64_t>& recv_counts, Traffic& traffic, const Allocate& allocate,
                       ExchangeTimes* times = nullptr) {
  std::vector<std::uint64_t> byte_counts(counts.size());
  for (std::size_t i = 0; i < counts.size(); ++i) byte_counts[i] = counts[i] * sizeof(T);
  const Traffic t =
      exchange_bytes(s, reinterpret_cast<const std::byte*>(send.data()), byte_counts, recv_counts, allocate, times);
  traffic.bytes_sent += t.bytes_sent;
  traffic.bytes_received += t.bytes_received;
  for (auto& c : recv_counts) c /= sizeof(T);
}

// Typed: counts in elements of T; received into the context's kept buffers (receive_buffers.hpp).
template <class T>
Received<T> exchange_kept(const Context::Impl& s, std::span<const T> send, std::span<const std::uint64_t> counts,
                          Traffic& traffic, ExchangeTimes* times = nullptr) {
  Received<T> out;
  exchange_elements<T>(
      s, send, counts, out.runs, traffic,
      [&](std::uint64_t bytes) {
        out.buffer = s.receive_buffers.take(bytes, s.threads);
        out.size = bytes / sizeof(T);
        return out.buffer.data();
      },
      times);
  return out;
}

// Typed, into a vector of its own: counts in elements of T; the received counts, in elements,
// go to recv_counts.
template <class T>
std::vector<T, io::UninitAllocator<T>> exchange(const Context::Impl& s, std::span<const T> send,
                                                std::span<const std::uint64_t> counts,
                                                std::vector<std::uint64_t>& recv_counts, Traffic& traffic) {
  std::vector<T, io::UninitAllocator<T>> out;
  exchange_elements<T>(s, send, counts, recv_counts, traffic, [&](std::uint64_t bytes) {
    out.resize(bytes / sizeof(T));
    return reinterpret_cast<std::byte*>(out.data());
  });
  return out;
}

}  // namespace tandem::dist
