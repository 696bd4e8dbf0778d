// What every binding file of tandem._tandem shares: running library work without the GIL, the
// checks on numpy arrays handed to the library, and keep-alive handles for lent memory.
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>  // in every file: type casters must be the same everywhere

#include <cstddef>
#include <memory>
#include <span>
#include <string_view>
#include <type_traits>

#include "tandem/core/types.hpp"

namespace py = pybind11;

namespace tandem::python {

// Raises what a signal handler raised while the GIL was released (KeyboardInterrupt for Ctrl-C).
void raise_pending_signals();

// Runs f without the GIL, then raises KeyboardInterrupt if Ctrl-C arrived meanwhile: the work
// always finishes (the caller's buffers are never left half written), its result is dropped.
template <class F>
auto without_gil(F&& f) {
  if constexpr (std::is_void_v<std::invoke_result_t<F>>) {
    {
      py::gil_scoped_release release;
      f();
    }
    raise_pending_signals();
  } else {
    std::invoke_result_t<F> r = [&] {
      py::gil_scoped_release release;
      return f();
    }();
    raise_pending_signals();
    return r;
  }
}

// The tandem element type of a numpy dtype, if it is one of u32/u64/i32/i64/f32/f64 in native
// byte order; nullopt otherwise.
std::optional<DType> key_dtype(const py::dtype& d);
std::string dtype_name(const py::dtype& d);

// The elements of a 1-D, C-contiguous, aligned numpy array in native byte order. TypeError when
// its dtype is not `expected`'s kind, ValueError (saying why) for any other layout. `what` names
// the argument in messages.
struct ArrayView {
  void* data{nullptr};
  std::size_t size{0};
  DType dtype{DType::u8};
};
// C-contiguous, aligned and in native byte order: what key_array accepts beside the dtype.
bool in_place_layout(const py::array& a);
ArrayView key_array(const py::array& a, std::string_view what, bool writeable);
// Any dtype of 4 or 8 bytes but object (values carried with keys as bits: dtype says u32 or u64).
ArrayView bits_array(const py::array& a, std::string_view what, bool writeable);

// A shared_ptr that holds a reference to a Python object and drops it under the GIL (the last
// owner may be a library thread that runs without it).
std::shared_ptr<const void> keep_alive(py::handle obj);

// A 1-D numpy array of n elements of T over memory owned by `owner` (no copy).
template <class T>
py::array_t<T> array_over(const T* data, std::size_t n, std::shared_ptr<const void> owner) {
  auto* holder = new std::shared_ptr<const void>(std::move(owner));
  py::capsule base(holder, [](void* p) { delete static_cast<std::shared_ptr<const void>*>(p); });
  return py::array_t<T>({static_cast<py::ssize_t>(n)}, {static_cast<py::ssize_t>(sizeof(T))}, data, base);
}

// Calls f(T{}) for the six key types; TypeError otherwise.
template <class F>
decltype(auto) visit_key(DType t, F&& f) {
  switch (t) {
    case DType::u32: return f(std::uint32_t{});
    case DType::u64: return f(std::uint64_t{});
    case DType::i32: return f(std::int32_t{});
    case DType::i64: return f(std::int64_t{});
    case DType::f32: return f(float{});
    case DType::f64: return f(double{});
    default: break;
  }
  throw py::type_error("tandem: element type " + std::string(to_string(t)) + " is not a key type");
}

Device device_arg(std::string_view name);  // "auto", "cpu", "gpu"; tandem.UsageError otherwise

// Registration of each binding file.
void bind_errors(py::module_& m);
void bind_report(py::module_& m);
void bind_sort(py::module_& m);
void bind_table(py::module_& m);
void bind_groupby(py::module_& m);
void bind_csv(py::module_& m);  // only where the library has tandem::read_csv
void bind_wordcount(py::module_& m);
void bind_topk(py::module_& m);
void bind_info(py::module_& m);
void bind_device(py::module_& m);  // GPU arrays; only their availability flag without CUDA
void bind_table_sort(py::module_& m);

}  // namespace tandem::python
