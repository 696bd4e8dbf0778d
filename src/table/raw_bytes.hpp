// Uninitialised memory for column arrays that are about to be written whole: no zero-filling
// pass over hundreds of MB that the parser overwrites anyway.
#pragma once
#include <cstddef>
#include <memory>

namespace tandem::detail {

// At least `bytes` bytes (never null), freed when the last copy of the pointer goes.
inline std::shared_ptr<std::byte> raw_bytes(std::size_t bytes) {
  return std::shared_ptr<std::byte>(new std::byte[bytes ? bytes : 1], std::default_delete<std::byte[]>());
}

}  // namespace tandem::detail
