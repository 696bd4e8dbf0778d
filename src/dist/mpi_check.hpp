// MPI calls return codes on the library's communicators (MPI_ERRORS_RETURN); this turns a failed
// one into an Error naming the call and MPI's own words.
#pragma once
#include <string>

#include <mpi.h>

#include "tandem/core/error.hpp"

namespace tandem::dist {

inline void check_mpi(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  throw Error(std::string(call) + " failed: " + std::string(text, std::size_t(len)));
}

}  // namespace tandem::dist
