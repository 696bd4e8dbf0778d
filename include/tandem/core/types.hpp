// Vocabulary shared by every capability: where work runs and the element types of files.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tandem {

// Where an operation runs. auto_ picks from measurements; hybrid splits between CPU and GPU.
enum class Device { auto_, cpu, gpu, hybrid };

Device parse_device(std::string_view name);  // throws UsageError naming the bad value
std::string_view to_string(Device d);

// Element types of raw and .npy arrays.
enum class DType { u8, u16, u32, u64, i8, i16, i32, i64, f32, f64 };

DType parse_dtype(std::string_view name);  // "u32", "f64", ...; throws UsageError
std::string_view to_string(DType t);
std::size_t dtype_size(DType t);
bool dtype_is_float(DType t);
bool dtype_is_signed(DType t);

template <class T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<std::uint8_t>() {
  return DType::u8;
}
template <>
constexpr DType dtype_of<std::uint16_t>() {
  return DType::u16;
}
template <>
constexpr DType dtype_of<std::uint32_t>() {
  return DType::u32;
}
template <>
constexpr DType dtype_of<std::uint64_t>() {
  return DType::u64;
}
template <>
constexpr DType dtype_of<std::int8_t>() {
  return DType::i8;
}
template <>
constexpr DType dtype_of<std::int16_t>() {
  return DType::i16;
}
template <>
constexpr DType dtype_of<std::int32_t>() {
  return DType::i32;
}
template <>
constexpr DType dtype_of<std::int64_t>() {
  return DType::i64;
}
template <>
constexpr DType dtype_of<float>() {
  return DType::f32;
}
template <>
constexpr DType dtype_of<double>() {
  return DType::f64;
}

// Calls f(T{}) with the C++ type behind t.
template <class F>
decltype(auto) visit_dtype(DType t, F&& f) {
  switch (t) {
    case DType::u8: return f(std::uint8_t{});
    case DType::u16: return f(std::uint16_t{});
    case DType::u32: return f(std::uint32_t{});
    case DType::u64: return f(std::uint64_t{});
    case DType::i8: return f(std::int8_t{});
    case DType::i16: return f(std::int16_t{});
    case DType::i32: return f(std::int32_t{});
    case DType::i64: return f(std::int64_t{});
    case DType::f32: return f(float{});
    case DType::f64: break;
  }
  return f(double{});
}

}  // namespace tandem
