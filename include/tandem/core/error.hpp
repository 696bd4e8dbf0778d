// One exception hierarchy for the whole library. Messages name the problem; the CLI maps
// UsageError and InputError to exit code 2 and everything else to 1.
#pragma once
#include <stdexcept>
#include <string>

namespace tandem {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The caller asked for something that cannot be done as asked (bad option, bad parameter).
struct UsageError : Error {
  using Error::Error;
};

// The data handed to us is malformed (truncated file, wrong type, unsorted list...).
struct InputError : Error {
  using Error::Error;
};

// A GPU was required but none is usable.
struct NoDeviceError : Error {
  using Error::Error;
};

// A CUDA runtime call or kernel launch failed.
struct CudaError : Error {
  using Error::Error;
};

// Device or pinned memory could not be allocated; callers may fall back to the CPU.
struct OutOfMemoryError : CudaError {
  using CudaError::CudaError;
};

// Exit code of the command-line tool for an exception escaping a command.
int exit_code_for(const std::exception& e) noexcept;

}  // namespace tandem
