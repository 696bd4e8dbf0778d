// Helpers shared by the tests: a temporary directory removed afterwards, the message of an
// InputError, GPU skip macro.
#pragma once
#include <unistd.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "tandem/core/error.hpp"

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "tandem-test-XXXXXX").string();
    path = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

// The message of the tandem::InputError that f() throws ("" if it throws none).
template <class F>
std::string input_error(F&& f) {
  try {
    f();
  } catch (const tandem::InputError& e) {
    return e.what();
  }
  return "";
}

// GPU tests call this first: they skip, not fail, on machines without a usable GPU.
#define TANDEM_REQUIRE_GPU()                                  \
  do {                                                        \
    if (::tandem::gpu_count() == 0) GTEST_SKIP() << "no GPU"; \
  } while (0)
