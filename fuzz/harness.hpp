// What every fuzz target promises, and the temporary files the readers under test need.
//
// The contract: for any input, the code under test either succeeds, and the target then checks
// what it returned, or throws a tandem::Error (the library's way of saying "bad input").
// Any other exception, a failed check, a crash or a sanitizer report is a finding: the target
// aborts and libFuzzer keeps the input.
#pragma once
#include <cxxabi.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <typeinfo>

#include "tandem/core/error.hpp"

namespace tandem::fuzz {

[[noreturn]] inline void fail(const std::string& why) {
  std::fprintf(stderr, "fuzz contract violated: %s\n", why.c_str());
  std::fflush(stderr);
  std::abort();
}

inline void check(bool ok, const std::string& why) {
  if (!ok) fail(why);
}

inline std::string type_name(const std::exception& e) {
  int status = 0;
  char* name = abi::__cxa_demangle(typeid(e).name(), nullptr, nullptr, &status);
  std::string out = status == 0 && name ? name : typeid(e).name();
  std::free(name);
  return out;
}

// Runs f(); a tandem::Error is an accepted answer, anything else thrown is a finding.
template <class F>
void expect_tandem_errors_only(const char* what, F&& f) {
  try {
    f();
  } catch (const tandem::Error&) {
  } catch (const std::exception& e) {
    fail(std::string(what) + " threw " + type_name(e) + " instead of a tandem::Error: " + e.what());
  } catch (...) {
    fail(std::string(what) + " threw something that is not a std::exception");
  }
}

// The targets run many tiny OpenMP regions; workers that spin (and yield) after each one take the
// CPU from the next input on a busy machine. Set before the OpenMP runtime starts, at load time.
inline const bool openmp_workers_sleep = [] { return ::setenv("KMP_BLOCKTIME", "0", 0) == 0; }();

// A private folder under $TMPDIR for the whole run, removed at exit (held by a pointer that is
// never destroyed, so the exit handler can still read it).
inline const std::filesystem::path& scratch_dir() {
  static const auto* dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/tandem-fuzz-XXXXXX";
    if (!::mkdtemp(pattern.data())) fail("cannot create a scratch folder from " + pattern);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(scratch_dir(), ec);
    });
    return new std::filesystem::path(pattern);
  }();
  return *dir;
}

// The readers take paths: each input is written to one file in the scratch folder.
inline std::string write_input(const std::string& name, const std::uint8_t* data, std::size_t size) {
  const std::string path = (scratch_dir() / name).string();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  out.close();
  if (!out) fail("cannot write the input to " + path);
  return path;
}

}  // namespace tandem::fuzz
