// A device string column's dictionary when the GPU ranked its strings: the distinct strings in
// byte order on the host, code k being string k and code size() a missing value.
#pragma once
#include <string>

#include "groupby/cpu_keys.hpp"
#include "table/gpu/string_ranks.hpp"

namespace tandem::gpu_groupby {

class SortedStringDictionary final : public cpu_groupby::KeyDecoder {
 public:
  SortedStringDictionary(std::string name, table_gpu::SortedStrings sorted, bool any_missing);
  Column decode(std::span<const std::uint32_t> codes, int threads) const override;
  std::string how() const override;

 private:
  std::string name_;
  table_gpu::SortedStrings sorted_;
};

}  // namespace tandem::gpu_groupby
