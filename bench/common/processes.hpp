// What the whole-process benchmarks share: running a program to its end, and the db-benchmark
// group-by data as a CSV file written once and kept for later runs.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace tandem::bench {

// Runs args[0] with the rest as arguments, to its end, its standard output going to /dev/null;
// its exit status (-1 when it could not start or did not exit normally).
int spawn_quiet(const std::vector<std::string>& args);

// DIR/tandem-groupby-ROWS-K.csv, written (through a .part file renamed into place) unless it exists.
std::string groupby_csv_file(const std::string& dir, std::size_t rows, std::size_t k);

}  // namespace tandem::bench
