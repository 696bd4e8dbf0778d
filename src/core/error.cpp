#include "tandem/core/error.hpp"

namespace tandem {

int exit_code_for(const std::exception& e) noexcept {
  if (dynamic_cast<const UsageError*>(&e) || dynamic_cast<const InputError*>(&e)) return 2;
  return 1;
}

}  // namespace tandem
