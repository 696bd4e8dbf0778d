// `tandem demo` part "index generation": the permute (gather of a strided tensor) with every
// index method, on the GPU when one is usable, else on the CPU with the same generators; every
// output checked against a plain triple loop.
#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <iostream>
#include <ostream>
#include <vector>

#include <fmt/format.h>

#include "command.hpp"
#include "tandem/core/format.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/cuda/launch.hpp"
#include "tandem/index.hpp"
#if TANDEM_HAS_CUDA
#include "tandem/cuda/buffers.hpp"
#include "tandem/cuda/runtime.hpp"
#include "tandem/cuda/stream.hpp"
#include "tandem/index/kernels.hpp"
#endif

namespace tandem::index {
namespace {

bool run_index_demo(std::ostream& out) {
  const Dims3 d{255, 129, 67};  // odd sizes, 2.2 M elements
  const std::int64_t A = d.y, B = d.z;
  const GatherSpec spec{d, A * B, 1, A};  // input (A, B, C) contiguous; output x runs over C
  const std::uint64_t n = d.count();
  std::vector<float> in(n), ref(n);
  for (std::uint64_t i = 0; i < n; ++i) in[i] = float(i % 1000) - 500.0f;
  for (std::uint32_t z = 0; z < d.z; ++z)
    for (std::uint32_t y = 0; y < d.y; ++y)
      for (std::uint32_t x = 0; x < d.x; ++x)
        ref[(std::size_t(z) * d.y + y) * d.x + x] = in[std::size_t(x * A * B + y + z * A)];
  bool ok = true;
  out << fmt::format("permute {} f32 ({}), output x over the input's slowest dimension\n", to_string(d),
                     human_bytes(n * sizeof(float)));
  auto all = {Method::div, Method::magic, Method::carry, Method::packed, Method::plain3d};
#if TANDEM_HAS_CUDA
  if (gpu::available()) {
    try {
      gpu::Stream s;
      gpu::DeviceBuffer<float> din(n), dout(n);
      TANDEM_CUDA(cudaMemcpyAsync(din.data(), in.data(), n * sizeof(float), cudaMemcpyHostToDevice, s));
      const PackLayout l = pack_layout(d);
      gpu::DeviceBuffer<std::uint8_t> table(std::size_t(n) * l.word_bits / 8);
      kernels::generate_table(table.data(), d, l, s);
      kernels::Walk w;
      w.dims = d;
      w.sx = spec.stride_x;
      w.sy = spec.stride_y;
      w.sz = spec.stride_z;
      w.table = table.data();
      w.layout = l;
      w.grid = gpu::grid_for(n, 256, kernels::full_wave(256));
      std::vector<float> back(n);
      for (Method m : all) {
        dout.poison(s);
        kernels::permute(m, din.data(), dout.data(), w, s);  // warm-up and checked run
        gpu::Event e0, e1;
        e0.record(s);
        kernels::permute(m, din.data(), dout.data(), w, s);
        e1.record(s);
        e1.sync();
        TANDEM_CUDA(cudaMemcpy(back.data(), dout.data(), n * sizeof(float), cudaMemcpyDeviceToHost));
        const bool good = std::memcmp(back.data(), ref.data(), n * sizeof(float)) == 0;
        ok &= good;
        out << fmt::format("  gpu0  {:<8} {:>10}  {}\n", to_string(m), human_seconds(e1.seconds_since(e0)),
                           good ? "matches the reference" : "WRONG");
      }
      return ok;
    } catch (const OutOfMemoryError& e) {
      out << "GPU out of memory, running on the CPU instead: " << e.what() << '\n';
    }
  }
#endif
  const PackedTable table = build_packed_table(d);
  std::vector<float> o(n);
  for (Method m : all) {
    std::fill(o.begin(), o.end(), -1.0f);
    Stopwatch w;
    gather_cpu(in.data(), o.data(), spec, m, &table);
    const double t = w.seconds();
    const bool good = std::memcmp(o.data(), ref.data(), n * sizeof(float)) == 0;
    ok &= good;
    out << fmt::format("  cpu   {:<8} {:>10}  {}\n", to_string(m), human_seconds(t),
                       good ? "matches the reference" : "WRONG");
  }
  out << fmt::format("  packed table: {} words of {} bits = {}\n", n, table.layout.word_bits,
                     human_bytes(table.memory_bytes()));
  return ok;
}

const bool demo = tandem::cli::register_demo_part({80, "index generation", [] { return run_index_demo(std::cout); }});

}  // namespace
}  // namespace tandem::index
