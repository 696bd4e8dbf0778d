#include "common.hpp"

#include <bit>
#include <string>

#include <fmt/format.h>

#include "tandem/core/error.hpp"

namespace tandem::python {

void raise_pending_signals() {
  if (PyErr_CheckSignals() != 0) throw py::error_already_set();
}

std::string dtype_name(const py::dtype& d) { return py::str(static_cast<const py::handle&>(d)).cast<std::string>(); }

namespace {
bool native_order(const py::dtype& d) {
  const char b = d.byteorder();
  return b == '=' || b == '|' || (b == '<' && std::endian::native == std::endian::little) ||
         (b == '>' && std::endian::native == std::endian::big);
}

}  // namespace

bool in_place_layout(const py::array& a) {
  const int flags = a.flags();
  return (flags & py::array::c_style) && (flags & py::detail::npy_api::NPY_ARRAY_ALIGNED_) && native_order(a.dtype());
}

namespace {
void check_layout(const py::array& a, std::string_view what, bool writeable) {
  if (a.ndim() != 1) throw py::value_error(fmt::format("{}: expected a 1-D array, got {} dimensions", what, a.ndim()));
  const int flags = a.flags();
  if (!(flags & py::array::c_style))
    throw py::value_error(fmt::format("{}: the array is not contiguous (copy it with numpy.ascontiguousarray)", what));
  if (!(flags & py::detail::npy_api::NPY_ARRAY_ALIGNED_))
    throw py::value_error(fmt::format("{}: the array's elements are not aligned", what));
  if (!native_order(a.dtype()))
    throw py::value_error(
        fmt::format("{}: the array is byte-swapped ({}); convert it with a.astype(a.dtype.newbyteorder('='))", what,
                    dtype_name(a.dtype())));
  if (writeable && !a.writeable()) throw py::value_error(fmt::format("{}: the array is read-only", what));
}
}  // namespace

std::optional<DType> key_dtype(const py::dtype& d) {
  const char kind = d.kind();
  const auto size = d.itemsize();
  if (kind == 'i' && size == 4) return DType::i32;
  if (kind == 'i' && size == 8) return DType::i64;
  if (kind == 'u' && size == 4) return DType::u32;
  if (kind == 'u' && size == 8) return DType::u64;
  if (kind == 'f' && size == 4) return DType::f32;
  if (kind == 'f' && size == 8) return DType::f64;
  return std::nullopt;
}

ArrayView key_array(const py::array& a, std::string_view what, bool writeable) {
  const auto t = key_dtype(a.dtype());
  if (!t)
    throw py::type_error(
        fmt::format("{}: dtype {} is not supported (expected int32, int64, uint32, uint64, float32 or float64)", what,
                    dtype_name(a.dtype())));
  check_layout(a, what, writeable);
  return {const_cast<void*>(a.data()), static_cast<std::size_t>(a.size()), *t};
}

ArrayView bits_array(const py::array& a, std::string_view what, bool writeable) {
  const auto itemsize = static_cast<std::size_t>(a.itemsize());
  if ((itemsize != 4 && itemsize != 8) || a.dtype().kind() == 'O')
    throw py::type_error(
        fmt::format("{}: expected 4- or 8-byte elements other than objects, got {}", what, dtype_name(a.dtype())));
  if (a.ndim() != 1) throw py::value_error(fmt::format("{}: expected a 1-D array, got {} dimensions", what, a.ndim()));
  if (!(a.flags() & py::array::c_style)) throw py::value_error(fmt::format("{}: the array is not contiguous", what));
  if (writeable && !a.writeable()) throw py::value_error(fmt::format("{}: the array is read-only", what));
  return {const_cast<void*>(a.data()), static_cast<std::size_t>(a.size()), itemsize == 4 ? DType::u32 : DType::u64};
}

std::shared_ptr<const void> keep_alive(py::handle obj) {
  obj.inc_ref();
  return std::shared_ptr<const void>(obj.ptr(), [](const void* p) {
    py::gil_scoped_acquire gil;
    Py_DECREF(static_cast<PyObject*>(const_cast<void*>(p)));
  });
}

Device device_arg(std::string_view name) {
  const Device d = parse_device(name);
  if (d == Device::hybrid)
    throw UsageError("device 'hybrid' applies to the command-line sort only (expected auto, cpu or gpu)");
  return d;
}

// ---- errors -------------------------------------------------------------------------------------
// The exception classes live in tandem/errors.py (so that they are ordinary Python classes with
// ValueError/MemoryError bases); the translator looks them up when a library error crosses over.
void bind_errors(py::module_&) {
  py::register_exception_translator([](std::exception_ptr p) {
    if (!p) return;
    auto raise = [](const char* cls, const std::exception& e) {
      py::object type = py::module_::import("tandem.errors").attr(cls);
      PyErr_SetString(type.ptr(), e.what());
    };
    try {
      std::rethrow_exception(p);
    } catch (const UsageError& e) {
      raise("UsageError", e);
    } catch (const InputError& e) {
      raise("InputError", e);
    } catch (const NoDeviceError& e) {
      raise("NoDeviceError", e);
    } catch (const OutOfMemoryError& e) {
      raise("OutOfMemoryError", e);
    } catch (const CudaError& e) {
      raise("CudaError", e);
    } catch (const Error& e) {
      raise("Error", e);
    }
  });
}

}  // namespace tandem::python
