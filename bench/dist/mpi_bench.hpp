// What the MPI benchmarks share: their command lines ("--name value" options and "--name" flags,
// each name declared; --help prints the usage and exits 0, anything undeclared exits 2; the
// harness's Bench would print its header once per rank) and the slowest rank's time.
#pragma once
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <set>
#include <string>

namespace tandem::bench {

class Options {
 public:
  Options(int argc, char** argv, const char* name, const char* usage, const std::set<std::string>& with_value,
          const std::set<std::string>& flags) {
    for (int i = 1; i < argc; ++i) {
      const std::string s = argv[i];
      if (s == "--help") {
        std::printf("%s %s\n", name, usage);
        std::exit(0);
      }
      if (flags.count(s)) {
        values_[s] = std::string(1, '1');  // not = "1": GCC 12 warns falsely (-Wrestrict)
      } else if (with_value.count(s) && i + 1 < argc) {
        values_[s] = argv[++i];
      } else {
        std::fprintf(stderr, "%s: unknown option or missing value: %s (see --help)\n", name, s.c_str());
        std::exit(2);
      }
    }
  }
  bool has(const std::string& key) const { return values_.count(key) != 0; }
  std::string get(const std::string& key, const std::string& def) const {
    const auto it = values_.find(key);
    return it == values_.end() ? def : it->second;
  }
  long long get_int(const std::string& key, long long def) const {
    return has(key) ? std::stoll(values_.at(key)) : def;
  }
  double get_double(const std::string& key, double def) const { return has(key) ? std::stod(values_.at(key)) : def; }

 private:
  std::map<std::string, std::string> values_;
};

// The largest of every rank's v (the slowest rank's seconds).
inline double max_over_ranks(double v, MPI_Comm comm = MPI_COMM_WORLD) {
  double m = v;
  MPI_Allreduce(&v, &m, 1, MPI_DOUBLE, MPI_MAX, comm);
  return m;
}

// body()'s exit code, or for an error that leaves it (a GPU asked for and missing, a failed
// call) its message and exit code 2 on every rank — MPI_Abort, since a rank that failed alone
// would leave the others waiting — instead of std::terminate's abort and core dump.
template <class F>
int run_reporting_errors(const char* name, F&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 2);
    return 2;
  }
}

}  // namespace tandem::bench
