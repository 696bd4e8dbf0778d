// The GPU benchmark of index methods (bench_index and `tandem index --bench`).
//
// Floors (written before optimising; docs/index-generation.md has the table):
//  * crop / broadcast add / stencil / permute move (read + write) bytes; the floor is those bytes
//    over the device copy bandwidth measured in the same run (cudaMemcpy D2D of the same bytes,
//    ~4.2 TB/s read + write on an H200, ~3 TB/s on an H100).
//  * index math: div/mod costs ~20-30 instructions per division on NVIDIA GPUs (two of them per
//    element), magic division ~4-5 (umulhi, add, shifts), the carry step ~6 (adds, compares,
//    selects). A one-byte-per-thread crop issues ~1 load + 1 store per element, so the index
//    instructions dominate: the u8 crop is index-bound, not memory-bound, until several elements
//    per thread and 16-byte accesses cut the instructions per byte by ~16x.
#include "tandem/index/benchmark.hpp"

#include "tandem/core/error.hpp"
#include "tandem/cuda/launch.hpp"

#if TANDEM_HAS_CUDA
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "tandem/cuda/buffers.hpp"
#include "tandem/cuda/runtime.hpp"
#include "tandem/cuda/stream.hpp"
#include "tandem/index.hpp"
#include "tandem/index/kernels.hpp"

namespace tandem::index {

namespace {

using kernels::Walk;

struct Ctx {
  BenchOptions o;
  BenchResult r;
  const std::function<void(const BenchRow&)>* on_row{nullptr};
  gpu::Stream s;
};

template <class F>
Stats time_gpu(Ctx& c, F&& f) {
  gpu::Event e0, e1;
  std::vector<double> v;
  for (int i = 0; i < c.o.warmup + c.o.reps; ++i) {
    e0.record(c.s);
    f();
    e1.record(c.s);
    e1.sync();
    if (i >= c.o.warmup) v.push_back(e1.seconds_since(e0));
  }
  return summarize(std::move(v));
}

void add_row(Ctx& c, std::string case_name, std::string method, Stats st, double bytes, bool ok,
             nlohmann::json extra = nlohmann::json::object()) {
  c.r.rows.push_back({std::move(case_name), std::move(method), st, bytes, ok, std::move(extra)});
  if (c.on_row && *c.on_row) (*c.on_row)(c.r.rows.back());
}
void info(Ctx& c, std::string what, double v, std::string unit = "x") {
  c.r.goals.push_back({std::move(what), v, 0, false, std::move(unit)});
}
void goal(Ctx& c, std::string what, double v, double g) { c.r.goals.push_back({std::move(what), v, g, true, "x"}); }

constexpr Method kMethods[] = {Method::div, Method::magic, Method::carry, Method::packed, Method::plain3d};

// The packed table for a shape, from a history cache whose factory generates it on the device.
struct DeviceTable {
  gpu::DeviceBuffer<std::uint8_t> buf;
  PackLayout layout;
};
HistoryCache make_device_cache(cudaStream_t s) {
  CacheOptions o;
  o.budget_bytes = std::size_t{4} << 30;
  return HistoryCache(o, [s](Dims3 d, std::size_t& bytes) -> std::shared_ptr<const void> {
    auto t = std::make_shared<DeviceTable>();
    t->layout = pack_layout(d);
    bytes = std::size_t(d.count()) * t->layout.word_bits / 8;
    t->buf = gpu::DeviceBuffer<std::uint8_t>(bytes);
    kernels::generate_table(t->buf.data(), d, t->layout, s);
    TANDEM_CUDA(cudaStreamSynchronize(s));
    return t;
  });
}

template <class T>
std::vector<T> to_host(const T* d, std::size_t n, cudaStream_t s) {
  std::vector<T> h(n);
  if (n) TANDEM_CUDA(cudaMemcpyAsync(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost, s));
  TANDEM_CUDA(cudaStreamSynchronize(s));
  return h;
}

// Runs every method of one op, checks the div output against the CPU reference and every other
// output against div's bytes, returns the median time per method (index: kMethods order).
struct Variant {
  std::string name;
  std::function<void()> run;
};

struct OpTimes {
  std::map<std::string, double> t;
};

OpTimes run_variants(Ctx& c, const std::string& case_name, double bytes, void* out, std::size_t out_bytes,
                     const std::vector<Variant>& variants, const std::function<bool(const void* host)>& check_host,
                     const nlohmann::json& extra) {
  OpTimes ot;
  gpu::DeviceBuffer<std::uint8_t> ref(out_bytes);
  for (std::size_t k = 0; k < variants.size(); ++k) {
    const auto& v = variants[k];
    TANDEM_CUDA(cudaMemsetAsync(out, 0xFF, out_bytes, c.s));  // poison
    v.run();
    bool ok = false;
    if (k == 0) {
      const auto h = to_host(static_cast<const std::uint8_t*>(out), out_bytes, c.s);
      ok = check_host(h.data());
      if (out_bytes) TANDEM_CUDA(cudaMemcpyAsync(ref.data(), out, out_bytes, cudaMemcpyDeviceToDevice, c.s));
    } else {
      ok = kernels::count_differences(out, ref.data(), out_bytes, c.s) == 0;
    }
    const Stats st = time_gpu(c, v.run);
    ot.t[v.name] = st.median;
    add_row(c, case_name, v.name, st, bytes, ok, extra);
  }
  return ot;
}

// A walk over d with source strides (sx, sy, sz) and the packed table of d from the cache.
Walk make_walk(Dims3 d, std::int64_t base, std::int64_t sx, std::int64_t sy, std::int64_t sz, HistoryCache& cache,
               const std::string& kernel, HistoryCache::Result& hit) {
  Walk w;
  w.dims = d;
  w.base = base;
  w.sx = sx;
  w.sy = sy;
  w.sz = sz;
  hit = cache.request(kernel, d);
  const auto& table = HistoryCache::as<DeviceTable>(hit);
  w.table = table.buf.data();
  w.layout = table.layout;
  w.grid = gpu::grid_for(d.count(), 256, kernels::full_wave(256));
  return w;
}

// ok_at(x, y, z, e) holds for every element (e the flat element number); OpenMP threads.
template <class F>
bool check_all(Dims3 d, F&& ok_at) {
  long long bad = 0;
#pragma omp parallel for reduction(+ : bad) schedule(static)
  for (std::int64_t z = 0; z < std::int64_t(d.z); ++z)
    for (std::uint32_t y = 0; y < d.y; ++y)
      for (std::uint32_t x = 0; x < d.x; ++x)
        bad += !ok_at(x, y, std::uint32_t(z), (z * d.y + y) * std::int64_t(d.x) + x);
  return bad == 0;
}

// Every float of a host copy of the output equals want(x, y, z, e).
template <class F>
bool check_floats(const void* host, Dims3 d, F&& want) {
  const std::uint8_t* h = static_cast<const std::uint8_t*>(host);
  return check_all(d, [&](std::uint32_t x, std::uint32_t y, std::uint32_t z, std::int64_t e) {
    float v;
    std::memcpy(&v, h + e * 4, 4);
    return v == want(x, y, z, e);
  });
}

std::string shape_name(Dims3 d) { return to_string(d); }

void bench_crop(Ctx& c, Dims3 d, int elem, HistoryCache& cache, bool last) {
  const Dims3 src{d.x + 6, d.y + 5, d.z + 3};
  const std::int64_t ox = 3, oy = 2, oz = 1;
  const std::uint64_t n = d.count();
  const std::size_t src_bytes = std::size_t(src.count()) * elem, out_bytes = std::size_t(n) * elem;
  gpu::DeviceBuffer<std::uint8_t> s(src_bytes + 64), o(out_bytes + 64);
  kernels::fill_bytes(s.data(), src_bytes, 11, c.s);
  const std::int64_t sy = src.x, sz = std::int64_t(src.x) * src.y;
  HistoryCache::Result hit;
  const Walk w = make_walk(d, ox + oy * sy + oz * sz, 1, sy, sz, cache, "crop", hit);
  std::vector<Variant> vs;
  for (Method m : kMethods)
    vs.push_back(
        {std::string(to_string(m)), [&c, m, elem, &s, &o, w] { kernels::crop(m, elem, s.data(), o.data(), w, c.s); }});
  // tandem: rows of bytes, carry iteration, 2 x 16-byte chunks per thread, wide loads/stores.
  Walk wb = w;
  wb.dims = {d.x * std::uint32_t(elem), d.y, d.z};
  wb.sy = w.sy * elem;
  wb.sz = w.sz * elem;
  wb.base = w.base * elem;
  wb.grid = 0;
  vs.push_back({"tandem wide", [&c, &s, &o, wb] { kernels::crop_wide(s.data(), o.data(), wb, c.s); }});
  if (elem == 1)
    for (int u : {1, 2, 4}) {  // 16-byte chunks per thread per iteration (the default is one of them)
      Walk wu = wb;
      wu.unroll = u;
      vs.push_back({fmt::format("tandem wide, {} chunk(s)/iteration", u),
                    [&c, &s, &o, wu] { kernels::crop_wide(s.data(), o.data(), wu, c.s); }});
    }
  auto check = [&](const void* host) {
    const std::uint8_t* h = static_cast<const std::uint8_t*>(host);
    return check_all(d, [&](std::uint32_t x, std::uint32_t y, std::uint32_t z, std::int64_t e) {
      const std::uint64_t se = std::uint64_t(w.base) + x + y * std::uint64_t(w.sy) + std::uint64_t(z) * w.sz;
      for (int b = 0; b < elem; ++b)
        if (h[e * elem + b] != std::uint8_t(kernels::test_bits(se * elem + b, 11))) return false;
      return true;
    });
  };
  const std::string cn = fmt::format("crop {} {}", elem == 1 ? "u8" : elem == 2 ? "u16" : "f32", shape_name(d));
  const double bytes = 2.0 * double(out_bytes);
  auto t = run_variants(c, cn, bytes, o.data(), out_bytes, vs, check,
                        {{"table_bytes", hit.bytes}, {"data_bytes", out_bytes}});
  // The anchor for the key goal: a device copy of the same bytes.
  const Stats copy =
      time_gpu(c, [&] { TANDEM_CUDA(cudaMemcpyAsync(o.data(), s.data(), out_bytes, cudaMemcpyDeviceToDevice, c.s)); });
  add_row(c, cn, "cudaMemcpy D2D (same bytes)", copy, bytes, true);
  if (last) {
    const std::string k = fmt::format("crop {} {}", elem == 1 ? "u8" : elem == 2 ? "u16" : "f32", shape_name(d));
    info(c, k + ": div / carry time (1 elem/thread)", t.t["div"] / t.t["carry"]);
    info(c, k + ": magic / carry time", t.t["magic"] / t.t["carry"]);
    info(c, k + ": packed / carry time", t.t["packed"] / t.t["carry"]);
    info(c, k + ": plain3d / carry time", t.t["plain3d"] / t.t["carry"]);
    info(c, k + ": carry 1 elem/thread, TB/s", bytes / t.t["carry"] / 1e12, " TB/s");
    info(c, k + ": packed table / data bytes", double(hit.bytes) / double(out_bytes));
    const double frac = copy.median / t.t["tandem wide"];
    if (elem == 1) goal(c, k + ": tandem wide / device copy bandwidth", frac, 0.8);
    else info(c, k + ": tandem wide / device copy bandwidth", frac);
  }
}

void bench_broadcast(Ctx& c, Dims3 d, HistoryCache& cache, bool last) {
  const std::uint64_t n = d.count(), nb = std::uint64_t(d.x) * d.z;
  gpu::DeviceBuffer<float> a(n), b(nb), o(n);
  kernels::fill_floats(a.data(), n, 21, c.s);
  kernels::fill_floats(b.data(), nb, 22, c.s);
  HistoryCache::Result hit;
  const Walk w = make_walk(d, 0, 1, 0, d.x, cache, "broadcast", hit);  // b broadcast along y
  std::vector<Variant> vs;
  for (Method m : kMethods)
    vs.push_back({std::string(to_string(m)),
                  [&c, m, &a, &b, &o, w] { kernels::broadcast_add(m, a.data(), b.data(), o.data(), w, c.s); }});
  Walk ww = w;
  ww.grid = 0;
  vs.push_back(
      {"tandem wide", [&c, &a, &b, &o, ww] { kernels::broadcast_add_wide(a.data(), b.data(), o.data(), ww, c.s); }});
  auto check = [&](const void* host) {
    return check_floats(host, d, [&](std::uint32_t x, std::uint32_t, std::uint32_t z, std::int64_t e) {
      return kernels::test_float(std::uint64_t(e), 21) + kernels::test_float(x + std::uint64_t(z) * d.x, 22);
    });
  };
  const std::string cn = fmt::format("broadcast add f32 {}", shape_name(d));
  const double bytes = 8.0 * double(n) + 4.0 * double(nb);
  auto t = run_variants(c, cn, bytes, o.data(), n * sizeof(float), vs, check, {{"table_bytes", hit.bytes}});
  const Stats copy = time_gpu(
      c, [&] { TANDEM_CUDA(cudaMemcpyAsync(o.data(), a.data(), n * sizeof(float), cudaMemcpyDeviceToDevice, c.s)); });
  add_row(c, cn, "cudaMemcpy D2D (a's bytes)", copy, 8.0 * double(n), true);
  if (last) {
    info(c, cn + ": div / carry time", t.t["div"] / t.t["carry"]);
    info(c, cn + ": magic / carry time", t.t["magic"] / t.t["carry"]);
    info(c, cn + ": packed / carry time", t.t["packed"] / t.t["carry"]);
    // Bandwidth fraction: (bytes / t_wide) / (copy bytes / t_copy).
    goal(c, cn + ": tandem wide / device copy bandwidth",
         (bytes / t.t["tandem wide"]) / (8.0 * double(n) / copy.median), 0.8);
  }
}

void bench_stencil(Ctx& c, Dims3 d, HistoryCache& cache, bool last) {
  const std::uint64_t n = d.count();
  gpu::DeviceBuffer<float> in(n), o(n);
  kernels::fill_floats(in.data(), n, 31, c.s);
  HistoryCache::Result hit;
  const Walk w = make_walk(d, 0, 1, d.x, std::int64_t(d.x) * d.y, cache, "stencil", hit);
  std::vector<Variant> vs;
  for (Method m : kMethods)
    vs.push_back(
        {std::string(to_string(m)), [&c, m, &in, &o, w] { kernels::stencil7(m, in.data(), o.data(), w, c.s); }});
  auto check = [&](const void* host) {
    auto v = [](std::int64_t e) { return kernels::test_float(std::uint64_t(e), 31); };
    return check_floats(host, d, [&](std::uint32_t x, std::uint32_t y, std::uint32_t z, std::int64_t e) {
      if (x == 0 || y == 0 || z == 0 || x + 1 >= d.x || y + 1 >= d.y || z + 1 >= d.z) return v(e);
      const float s = (v(e - 1) + v(e + 1)) + (v(e - w.sy) + v(e + w.sy)) + (v(e - w.sz) + v(e + w.sz));
      return 0.5f * v(e) + 0.0625f * s;
    });
  };
  const std::string cn = fmt::format("stencil7 f32 {}", shape_name(d));
  auto t = run_variants(c, cn, 8.0 * double(n), o.data(), n * sizeof(float), vs, check, {{"table_bytes", hit.bytes}});
  if (last) {
    info(c, cn + ": div / carry time", t.t["div"] / t.t["carry"]);
    info(c, cn + ": plain3d / carry time", t.t["plain3d"] / t.t["carry"]);
    info(c, cn + ": packed / carry time", t.t["packed"] / t.t["carry"]);
  }
}

void bench_permute(Ctx& c, Dims3 d, HistoryCache& cache, bool last) {
  // Input contiguous with extents (A, B, C) = (d.y, d.z, d.x); output x runs over C (stride A*B).
  const std::uint64_t n = d.count();
  const std::int64_t A = d.y, B = d.z;
  gpu::DeviceBuffer<float> in(n), o(n);
  kernels::fill_floats(in.data(), n, 41, c.s);
  HistoryCache::Result hit;
  const Walk w = make_walk(d, 0, A * B, 1, A, cache, "permute", hit);
  std::vector<Variant> vs;
  for (Method m : kMethods)
    vs.push_back(
        {std::string(to_string(m)), [&c, m, &in, &o, w] { kernels::permute(m, in.data(), o.data(), w, c.s); }});
  auto check = [&](const void* host) {
    return check_floats(host, d, [&](std::uint32_t x, std::uint32_t y, std::uint32_t z, std::int64_t) {
      return kernels::test_float(std::uint64_t(x * A * B + y + z * A), 41);
    });
  };
  const std::string cn = fmt::format("permute f32 {}", shape_name(d));
  auto t = run_variants(c, cn, 8.0 * double(n), o.data(), n * sizeof(float), vs, check, {{"table_bytes", hit.bytes}});
  if (last) {
    info(c, cn + ": div / carry time", t.t["div"] / t.t["carry"]);
    info(c, cn + ": magic / carry time", t.t["magic"] / t.t["carry"]);
  }
}

}  // namespace

BenchResult run_gpu_benchmarks(const BenchOptions& o, const std::function<void(const BenchRow&)>& on_row) {
  if (!gpu::available())
    throw NoDeviceError("tandem index --bench needs a CUDA GPU, and none is usable on this machine");
  Ctx c;
  c.o = o;
  if (o.quick) c.o.reps = std::min(c.o.reps, 3);
  c.on_row = &on_row;
  const std::vector<Dims3> shapes = o.quick ? std::vector<Dims3>{{5, 70, 10}, {67, 33, 17}}
                                            : std::vector<Dims3>{{5, 70, 10}, {257, 131, 67}, {511, 509, 513}};
  HistoryCache cache = make_device_cache(c.s);
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const bool last = i + 1 == shapes.size();
    const Dims3 d = shapes[i];
    try {
      for (int elem : {1, 2, 4}) bench_crop(c, d, elem, cache, last);
      bench_broadcast(c, d, cache, last);
      bench_stencil(c, d, cache, last);
      bench_permute(c, d, cache, last);
    } catch (const OutOfMemoryError& e) {
      info(c, fmt::format("{}: skipped, out of GPU memory", to_string(d)), 0, "");
    }
    // Generation on a history-cache hit: the lookup alone; on a miss: the generation kernel.
    HistoryCache fresh = make_device_cache(c.s);
    Stopwatch miss_w;
    fresh.request("k", d);
    const double miss = miss_w.seconds();
    Stopwatch hit_w;
    const auto h = fresh.request("k", d);
    const double hit = hit_w.seconds();
    add_row(c, fmt::format("packed table {}", to_string(d)), "generate (history miss)", summarize({miss}),
            double(h.bytes), true);
    add_row(c, fmt::format("packed table {}", to_string(d)), "reuse (history hit)", summarize({hit}), double(h.bytes),
            h.hit);
    if (last) {
      info(c, fmt::format("packed table {}: generation on a history miss", to_string(d)), miss * 1e6, " us");
      info(c, fmt::format("packed table {}: generation on a history hit", to_string(d)), hit * 1e6, " us");
      info(c, fmt::format("packed table {}: table memory", to_string(d)), double(h.bytes) / (1 << 20), " MiB");
    }
  }
  return std::move(c.r);
}

}  // namespace tandem::index

#else  // CPU-only build

namespace tandem::index {
BenchResult run_gpu_benchmarks(const BenchOptions&, const std::function<void(const BenchRow&)>&) {
  throw NoDeviceError("tandem index --bench needs a CUDA GPU: this tandem was built without CUDA");
}
}  // namespace tandem::index

#endif
