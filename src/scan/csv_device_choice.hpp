// Where `device = auto` groups a CSV file: the estimated whole-run time of the CPU streaming scan
// and of the GPU path (file read into GPU memory, parsed and grouped there), from rates measured
// on the db-benchmark files (docs/BENCHMARKS.md, "CSV group-by on the GPU"):
//   CPU  0.05 s + bytes / (270 MB/s x threads)   (q1 on 16 cores: 1.21 s for 5.19 GB; 0.18 s for 0.49 GB)
//   GPU  0.27 s + bytes / 16 GB/s                 (CUDA start and allocations; q1/q3: 0.49/0.59 s for 5.19 GB)
// The CPU rate is that of the cheapest question (few groups), so the GPU is never chosen where
// the CPU would finish first. auto takes the GPU only where its estimate is at least 10 % below
// the CPU's, a GPU is present, and the file is one the GPU path reads (sized, not compressed).
// Pure: the CPU tests check it.
#pragma once
#include <cstddef>
#include <string>

namespace tandem::scan {

struct CsvDeviceEstimate {
  double cpu_seconds{0};
  double gpu_seconds{0};
  bool gpu{false};               // auto's choice
  std::string describe() const;  // "device auto: CPU estimate 1.25 s (16 threads), GPU 0.60 s: the GPU"
};

// bytes: the file's size; threads: the CPU scan's threads; gpu_usable: a GPU is present and the
// file is sized and uncompressed.
CsvDeviceEstimate estimate_csv_groupby(std::size_t bytes, int threads, bool gpu_usable);

}  // namespace tandem::scan
