#include "tandem/core/types.hpp"

#include <array>
#include <utility>

#include <fmt/format.h>

#include "tandem/core/error.hpp"

namespace tandem {
namespace {
constexpr std::array<std::pair<std::string_view, Device>, 4> kDevices{
    {{"auto", Device::auto_}, {"cpu", Device::cpu}, {"gpu", Device::gpu}, {"hybrid", Device::hybrid}}};

struct DTypeInfo {
  std::string_view name;
  DType type;
  std::size_t size;
  bool is_float;
  bool is_signed;
};
constexpr std::array<DTypeInfo, 10> kDTypes{{{"u8", DType::u8, 1, false, false},
                                             {"u16", DType::u16, 2, false, false},
                                             {"u32", DType::u32, 4, false, false},
                                             {"u64", DType::u64, 8, false, false},
                                             {"i8", DType::i8, 1, false, true},
                                             {"i16", DType::i16, 2, false, true},
                                             {"i32", DType::i32, 4, false, true},
                                             {"i64", DType::i64, 8, false, true},
                                             {"f32", DType::f32, 4, true, true},
                                             {"f64", DType::f64, 8, true, true}}};

const DTypeInfo& info(DType t) {
  for (const auto& i : kDTypes)
    if (i.type == t) return i;
  throw Error("unknown element type");
}
}  // namespace

Device parse_device(std::string_view name) {
  for (auto [n, d] : kDevices)
    if (n == name) return d;
  throw UsageError(fmt::format("unknown device '{}' (expected auto, cpu, gpu or hybrid)", name));
}

std::string_view to_string(Device d) {
  for (auto [n, v] : kDevices)
    if (v == d) return n;
  return "?";
}

DType parse_dtype(std::string_view name) {
  for (const auto& i : kDTypes)
    if (i.name == name) return i.type;
  throw UsageError(
      fmt::format("unknown element type '{}' (expected one of u8 u16 u32 u64 i8 i16 i32 i64 f32 f64)", name));
}

std::string_view to_string(DType t) { return info(t).name; }
std::size_t dtype_size(DType t) { return info(t).size; }
bool dtype_is_float(DType t) { return info(t).is_float; }
bool dtype_is_signed(DType t) { return info(t).is_signed; }

}  // namespace tandem
