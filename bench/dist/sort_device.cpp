// bench_dist_sort_device: dist::sort_device of keys already in each rank's GPU memory (one rank
// per GPU), against, in the same run on the same generated keys: the sort of all N keys on one
// GPU (rank 0's, while the others wait), and NCCL's all-to-all of the bytes an even exchange
// moves (the exchange floor). Run one rank per GPU, e.g. on a host with two GPUs:
//   NCCL_NVLS_ENABLE=0 mpirun -np 2 --bind-to none bench_dist_sort_device --log2 30
// Goals (several GPUs): exchange >= 0.7x NCCL's all-to-all bandwidth; 2 GPUs >= 1.6x one GPU,
// 4 GPUs >= 2.8x. Results are checked: every slice sorted, slices in order, N/P +- 1 keys each,
// the keys' sum and xor unchanged, and the one-GPU sort the same way.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#if TANDEM_BENCH_NCCL
#include <nccl.h>
#endif

#include "mpi_bench.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/dist.hpp"

namespace {

using tandem::bench::max_over_ranks;

struct Args {
  int log2{30};
  int reps{5};
  std::string type{"u32"};
  std::string values{"none"};
  bool one_gpu{true};
};

Args parse(int argc, char** argv) {
  const tandem::bench::Options o(argc, argv, "bench_dist_sort_device",
                                 "[--log2 N (total keys 2^N)] [--type u32|u64] [--values none|u32|u64 (pairs)] "
                                 "[--reps R] [--no-one-gpu] [--quick]",
                                 {"--log2", "--reps", "--type", "--values"}, {"--no-one-gpu", "--quick"});
  Args a;
  const bool quick = o.has("--quick");
  a.log2 = int(o.get_int("--log2", quick ? 24 : a.log2));
  a.reps = int(o.get_int("--reps", quick ? 3 : a.reps));
  a.type = o.get("--type", a.type);
  a.values = o.get("--values", a.values);
  a.one_gpu = !o.has("--no-one-gpu");
  return a;
}

void cuda_ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "bench_dist_sort_device: %s: %s\n", what, cudaGetErrorString(e));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

std::uint64_t mix(std::uint64_t x) {  // splitmix64: key i of the whole input, whichever rank makes it
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

template <class K>
K key_at(std::uint64_t i) {
  return K(mix(i) >> (64 - 8 * sizeof(K)));
}

template <class K>
std::vector<K> make_keys(std::uint64_t begin, std::uint64_t end) {
  std::vector<K> keys(end - begin);
#pragma omp parallel for schedule(static)
  for (std::uint64_t i = begin; i < end; ++i) keys[i - begin] = key_at<K>(i);
  return keys;
}

struct Sums {
  std::uint64_t sum{0}, x{0};
};
template <class K>
Sums sums(const std::vector<K>& keys) {
  std::uint64_t s = 0, x = 0;
#pragma omp parallel for reduction(+ : s) reduction(^ : x)
  for (std::size_t i = 0; i < keys.size(); ++i) s += std::uint64_t(keys[i]), x ^= std::uint64_t(keys[i]);
  return {s, x};
}

template <class K>
std::vector<K> download(const tandem::gpu::DeviceBuffer<K>& d) {
  std::vector<K> h(d.size());
  cuda_ok(cudaMemcpy(h.data(), d.data(), d.bytes(), cudaMemcpyDeviceToHost), "copy back");
  return h;
}

// Every slice sorted, in order across ranks, N/P +- 1 keys each, the same sum and xor as the input.
template <class K>
bool check(const std::vector<K>& keys, std::uint64_t total, Sums input, int rank, int size, MPI_Comm comm) {
  int ok = std::is_sorted(keys.begin(), keys.end()) ? 1 : 0;
  const std::uint64_t want =
      total * std::uint64_t(rank + 1) / std::uint64_t(size) - total * std::uint64_t(rank) / std::uint64_t(size);
  ok &= keys.size() == want;
  const Sums got = sums(keys);
  std::uint64_t s = 0, x = 0, in_s = 0, in_x = 0;
  MPI_Allreduce(&got.sum, &s, 1, MPI_UINT64_T, MPI_SUM, comm);
  MPI_Allreduce(&got.x, &x, 1, MPI_UINT64_T, MPI_BXOR, comm);
  MPI_Allreduce(&input.sum, &in_s, 1, MPI_UINT64_T, MPI_SUM, comm);
  MPI_Allreduce(&input.x, &in_x, 1, MPI_UINT64_T, MPI_BXOR, comm);
  ok &= s == in_s && x == in_x;
  std::uint64_t last = keys.empty() ? 0 : std::uint64_t(keys.back()), prev_last = 0;
  MPI_Sendrecv(&last, 1, MPI_UINT64_T, (rank + 1) % size, 0, &prev_last, 1, MPI_UINT64_T, (rank + size - 1) % size, 0,
               comm, MPI_STATUS_IGNORE);
  if (rank > 0 && !keys.empty()) ok &= prev_last <= std::uint64_t(keys.front());
  int all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
  return all == 1;
}

double stage(const nlohmann::json& ranks, const char* name) {  // the slowest rank's
  double m = 0;
  for (const auto& r : ranks)
    if (r["stages"].contains(name)) m = std::max(m, r["stages"][name].get<double>());
  return m;
}

#if TANDEM_BENCH_NCCL
// NCCL all-to-all of `block` bytes to and from every other rank, on buffers made once; the
// slowest rank's seconds, median of reps.
double nccl_alltoall(std::size_t block, int reps, int rank, int size, MPI_Comm comm) {
  ncclUniqueId id;
  if (rank == 0) ncclGetUniqueId(&id);
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, comm);
  ncclComm_t nccl;
  if (ncclCommInitRank(&nccl, size, id, rank) != ncclSuccess) return 0;
  char *send = nullptr, *recv = nullptr;
  cuda_ok(cudaMalloc(&send, block * std::size_t(size)), "cudaMalloc");
  cuda_ok(cudaMalloc(&recv, block * std::size_t(size)), "cudaMalloc");
  cuda_ok(cudaMemset(send, 1, block * std::size_t(size)), "cudaMemset");
  cudaStream_t s;
  cuda_ok(cudaStreamCreate(&s), "cudaStreamCreate");
  std::vector<double> t;
  for (int r = 0; r <= reps; ++r) {
    MPI_Barrier(comm);
    tandem::Stopwatch w;
    ncclGroupStart();
    for (int d = 0; d < size; ++d) {
      if (d == rank) continue;
      ncclSend(send + block * std::size_t(d), block, ncclUint8, d, nccl, s);
      ncclRecv(recv + block * std::size_t(d), block, ncclUint8, d, nccl, s);
    }
    ncclGroupEnd();
    cuda_ok(cudaStreamSynchronize(s), "NCCL all-to-all");
    const double sec = max_over_ranks(w.seconds(), comm);
    if (r > 0) t.push_back(sec);
  }
  cudaStreamDestroy(s);
  cudaFree(send);
  cudaFree(recv);
  ncclCommDestroy(nccl);
  return tandem::summarize(t).median;
}
#endif

// Keys (and values: each pair's value is its global input position) on this rank's GPU.
template <class K, class V>
struct DeviceData {
  tandem::gpu::DeviceBuffer<K> keys;
  tandem::gpu::DeviceBuffer<V> values;  // empty for keys alone
};

template <class K, class V>
DeviceData<K, V> upload(const std::vector<K>& keys, std::uint64_t first_position, bool pairs) {
  DeviceData<K, V> d{tandem::gpu::DeviceBuffer<K>(keys.size()), {}};
  cuda_ok(cudaMemcpy(d.keys.data(), keys.data(), keys.size() * sizeof(K), cudaMemcpyHostToDevice), "upload");
  if (pairs) {
    std::vector<V> v(keys.size());
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = V(first_position + i);
    d.values = tandem::gpu::DeviceBuffer<V>(v.size());
    cuda_ok(cudaMemcpy(d.values.data(), v.data(), v.size() * sizeof(V), cudaMemcpyHostToDevice), "upload");
  }
  return d;
}

template <class T>
tandem::gpu::DeviceBuffer<T> device_copy(const tandem::gpu::DeviceBuffer<T>& from) {
  tandem::gpu::DeviceBuffer<T> to(from.size());
  cuda_ok(cudaMemcpy(to.data(), from.data(), from.bytes(), cudaMemcpyDeviceToDevice), "copy");
  return to;
}

// Pairs: each value names its input position, whose key the generator gives again, and equal
// keys come in position order (the stable order) within the slice and across its edges.
template <class K, class V>
bool check_pairs(const std::vector<K>& keys, const std::vector<V>& values, int rank, int size, MPI_Comm comm) {
  int ok = 1;
#pragma omp parallel for reduction(& : ok)
  for (std::size_t i = 0; i < keys.size(); ++i) {
    ok &= keys[i] == key_at<K>(std::uint64_t(values[i])) ? 1 : 0;
    if (i > 0 && keys[i] == keys[i - 1]) ok &= values[i - 1] < values[i] ? 1 : 0;
  }
  std::uint64_t last[2] = {keys.empty() ? 0 : std::uint64_t(keys.back()), values.empty() ? 0 : values.back()},
                prev[2] = {0, 0};
  MPI_Sendrecv(last, 2, MPI_UINT64_T, (rank + 1) % size, 1, prev, 2, MPI_UINT64_T, (rank + size - 1) % size, 1, comm,
               MPI_STATUS_IGNORE);
  if (rank > 0 && !keys.empty() && prev[0] == std::uint64_t(keys.front()))
    ok &= prev[1] < std::uint64_t(values.front());
  int all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
  return all == 1;
}

template <class K, class V>
int run(const Args& a, tandem::dist::Context& ctx) {
  const int rank = ctx.rank(), size = ctx.size();
  const bool pairs = a.values != "none";
  const std::size_t element = sizeof(K) + (pairs ? sizeof(V) : 0);
  const std::uint64_t total = std::uint64_t{1} << a.log2;
  const std::uint64_t begin = total * std::uint64_t(rank) / std::uint64_t(size),
                      end = total * std::uint64_t(rank + 1) / std::uint64_t(size);
  const std::size_t n = std::size_t(end - begin);
  Sums input;
  DeviceData<K, V> input_d;
  {
    const std::vector<K> keys = make_keys<K>(begin, end);
    input = sums(keys);
    input_d = upload<K, V>(keys, begin, pairs);
  }
  tandem::SortOptions opts;
  opts.device = tandem::Device::gpu;

  std::vector<double> dist, exchange;
  nlohmann::json last;
  bool ok = true;
  for (int r = 0; r <= a.reps; ++r) {  // the first round warms up
    DeviceData<K, V> d{device_copy(input_d.keys), device_copy(input_d.values)};
    cuda_ok(cudaDeviceSynchronize(), "sync");
    MPI_Barrier(ctx.comm());
    tandem::Stopwatch w;
    const auto rep = pairs ? tandem::dist::sort_pairs_device(ctx, d.keys, d.values, opts)
                           : tandem::dist::sort_device(ctx, d.keys, opts);
    const double t = max_over_ranks(w.seconds(), ctx.comm());
    if (r == a.reps) {
      const std::vector<K> keys = download(d.keys);
      ok = check(keys, total, input, rank, size, ctx.comm());
      if (pairs) ok = check_pairs(keys, download(d.values), rank, size, ctx.comm()) && ok;
    }
    if (r == 0) continue;
    dist.push_back(t);
    last = rep.report.details()["ranks"];
    exchange.push_back(stage(last, "exchange"));
  }
  const tandem::Stats s_dist = tandem::summarize(dist);
  const double m_exchange = tandem::summarize(exchange).median;

  // One GPU: all N keys (pairs) on rank 0's GPU, the others waiting.
  tandem::Stats s_one{};
  bool one_ok = true;
  input_d = {};
  if (a.one_gpu && rank == 0) {
    const std::vector<K> all = make_keys<K>(0, total);
    const DeviceData<K, V> all_d = upload<K, V>(all, 0, pairs);
    DeviceData<K, V> work;
    std::vector<double> t;
    for (int r = 0; r <= a.reps; ++r) {
      work = {device_copy(all_d.keys), device_copy(all_d.values)};
      cuda_ok(cudaDeviceSynchronize(), "sync");
      tandem::Stopwatch w;
      if (pairs) tandem::sort_pairs_device(work.keys.data(), work.values.data(), work.keys.size(), opts);
      else tandem::sort_device(work.keys.data(), work.keys.size(), opts);
      cuda_ok(cudaDeviceSynchronize(), "one-GPU sort");
      if (r > 0) t.push_back(w.seconds());
    }
    const std::vector<K> sorted = download(work.keys);
    const Sums got = sums(sorted), want = sums(all);
    one_ok = std::is_sorted(sorted.begin(), sorted.end()) && got.sum == want.sum && got.x == want.x;
    if (pairs) one_ok = one_ok && check_pairs(sorted, download(work.values), 0, 1, MPI_COMM_SELF);
    s_one = tandem::summarize(t);
  }
  MPI_Barrier(ctx.comm());

  double floor = 0;
#if TANDEM_BENCH_NCCL
  if (size > 1 && ctx.has_nccl())
    floor = nccl_alltoall(n / std::size_t(size) * element, a.reps, rank, size, ctx.comm());
#endif
  if (rank == 0) {
    const std::string what = pairs ? a.type + " keys + " + a.values + " values" : a.type + " keys";
    const double off_rank =
        double(n) * double(element) * double(size - 1) / double(size);  // bytes per rank, even split
    fmt::print("bench_dist_sort_device: 2^{} {} over {} ranks ({}), {} reps, check {}{}\n", a.log2, what, size,
               ctx.describe(), a.reps, ok ? "ok" : "FAILED",
               a.one_gpu ? (one_ok ? ", one GPU ok" : ", one GPU FAILED") : "");
    fmt::print("  {:<44} {:>9.2f} ms  (min {:.2f}, max {:.2f})\n",
               pairs ? "dist::sort_pairs_device" : "dist::sort_device", s_dist.median * 1e3, s_dist.min * 1e3,
               s_dist.max * 1e3);
    for (const auto& x : last) {
      std::string stages;
      for (auto it = x["stages"].begin(); it != x["stages"].end(); ++it)
        stages += fmt::format(" {} {:.2f}ms", it.key(), it.value().get<double>() * 1e3);
      fmt::print("    rank {}:{}\n", x["rank"].get<int>(), stages);
    }
    if (a.one_gpu) {
      const double speedup = s_one.median / s_dist.median;
      fmt::print("  {:<44} {:>9.2f} ms  (min {:.2f}, max {:.2f})\n", "all on one GPU (tandem::sort_[pairs_]device)",
                 s_one.median * 1e3, s_one.min * 1e3, s_one.max * 1e3);
      fmt::print("  {} GPUs / one GPU: {:.2f}x\n", size, speedup);
      if (size > 1) {
        const double goal = size >= 4 ? 2.8 : 1.6;
        fmt::print("SUMMARY|dist_sort_device|{} ranks{} vs 1 GPU, 2^{} {}|{:.2f}x ({:.1f} ms)|>= {:.1f}x|{}\n", size,
                   ctx.has_nccl() ? " (a GPU each)" : " (sharing GPUs)", a.log2, what, speedup, s_dist.median * 1e3,
                   goal, speedup >= goal ? "ok" : "MISS");
      }
    }
    if (size > 1 && floor > 0) {
      const double bw = floor / std::max(m_exchange, 1e-9);
      fmt::print("  {:<44} {:>9.2f} ms  ({:.1f} GB/s per rank)\n", "NCCL all-to-all, even blocks", floor * 1e3,
                 off_rank / floor / 1e9);
      fmt::print("  {:<44} {:>9.2f} ms  ({:.1f} GB/s per rank): {:.2f}x the floor's bandwidth\n",
                 "  the sort's exchange (slowest rank)", m_exchange * 1e3, off_rank / m_exchange / 1e9, bw);
      fmt::print("SUMMARY|dist_sort_device|{} GPUs: exchange / NCCL all-to-all|{:.2f}x|>= 0.7x|{}\n", size, bw,
                 bw >= 0.7 ? "ok" : "MISS");
    } else if (size > 1) {
      fmt::print("  NCCL floor: not measured (the context has no NCCL: {})\n", ctx.describe());
    }
    if (!ok || !one_ok) fmt::print("SUMMARY|dist_sort_device|{} ranks: result check|FAILED||FAIL\n", size);
  }
  return ok && one_ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const Args a = parse(argc, argv);
  const int status = tandem::bench::run_reporting_errors("bench_dist_sort_device", [&] {
    int status = 0;
    {
      tandem::dist::Context ctx(MPI_COMM_WORLD);
      const bool wide = a.values == "u64";
      if ((a.type != "u32" && a.type != "u64") || (a.values != "none" && a.values != "u32" && !wide)) {
        if (ctx.rank() == 0) std::fprintf(stderr, "bench_dist_sort_device: --type u32|u64, --values none|u32|u64\n");
        status = 2;
      } else if (a.type == "u64") {
        status = wide ? run<std::uint64_t, std::uint64_t>(a, ctx) : run<std::uint64_t, std::uint32_t>(a, ctx);
      } else {
        status = wide ? run<std::uint32_t, std::uint64_t>(a, ctx) : run<std::uint32_t, std::uint32_t>(a, ctx);
      }
    }
    return status;
  });
  MPI_Finalize();
  return status;
}
