// `tandem demo` part "host sort": tandem::sort of a std::vector (the path auto picks) against the
// naive path: with a GPU, plain pageable cudaMemcpy in and out around a device sort; without one,
// std::sort on one thread.
#include <algorithm>
#include <cstring>
#include <iostream>
#include <random>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "tandem/core/device.hpp"
#include "tandem/core/format.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/sort.hpp"
#if TANDEM_HAS_CUDA
#include "tandem/cuda/buffers.hpp"
#include "tandem/cuda/runtime.hpp"
#endif

namespace {

const bool demo = tandem::cli::register_demo_part(
    {31, "host sort", [] {
       const bool gpu = tandem::gpu_count() > 0;
       const std::size_t n = gpu ? (std::size_t{1} << 26) : (std::size_t{1} << 21) + 17;
       std::mt19937_64 rng(7);
       std::vector<std::uint32_t> in(n);
       for (auto& k : in) k = static_cast<std::uint32_t>(rng());
       std::vector<std::uint32_t> ours = in, naive = in;

       if (gpu) {  // first use allocates the pinned staging slots and the device workspace: not timed
         auto warm = in;
         tandem::sort(std::span<std::uint32_t>(warm));
       }
       tandem::Stopwatch w;
       const tandem::Report r = tandem::sort(std::span<std::uint32_t>(ours));
       const double t_ours = w.seconds();
       std::string naive_name;
       w.reset();
#if TANDEM_HAS_CUDA
       if (gpu) {
         naive_name = "pageable cudaMemcpy + device sort + cudaMemcpy";
         tandem::gpu::DeviceBuffer<std::uint32_t> d(n);
         TANDEM_CUDA(cudaMemcpy(d.data(), naive.data(), n * 4, cudaMemcpyHostToDevice));
         tandem::sort_device(d.data(), n);
         TANDEM_CUDA(cudaMemcpy(naive.data(), d.data(), n * 4, cudaMemcpyDeviceToHost));
       }
#endif
       if (!gpu) {
         naive_name = "std::sort, 1 thread";
         std::sort(naive.begin(), naive.end());
       }
       const double t_naive = w.seconds();
       const bool ok = ours == naive && std::is_sorted(ours.begin(), ours.end());
       std::cout << fmt::format("{} u32 keys from a std::vector: tandem::sort ({}) {}, naive ({}) {}: {:.1f}x; {}\n", n,
                                r.details().value("path", "?"), tandem::human_seconds(t_ours), naive_name,
                                tandem::human_seconds(t_naive), t_naive / t_ours,
                                ok ? "results match" : "RESULTS DIFFER");
       std::cout << r.explain();
       return ok;
     }});

}  // namespace
