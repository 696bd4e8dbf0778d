// Arrays in GPU memory, given as raw pointers by tandem/_device.py (which reads
// __cuda_array_interface__): sorts with tandem::sort_device on the caller's stream, group-by with
// the hash engine. Without CUDA only `cuda_built = False` is bound.
#include "common.hpp"

#if TANDEM_HAS_CUDA
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "device.hpp"
#include "tandem/cuda/buffers.hpp"
#include "tandem/cuda/runtime.hpp"
#include "tandem/cuda/stream.hpp"
#include "tandem/sort.hpp"
#endif

namespace tandem::python {

#if TANDEM_HAS_CUDA
namespace {

cudaStream_t stream_arg(std::uintptr_t s) { return reinterpret_cast<cudaStream_t>(s); }

// The device that holds memory at p; ValueError when p is not GPU memory.
int device_of(std::uintptr_t p) {
  cudaPointerAttributes a{};
  TANDEM_CUDA(cudaPointerGetAttributes(&a, reinterpret_cast<const void*>(p)));
  if (a.type != cudaMemoryTypeDevice && a.type != cudaMemoryTypeManaged)
    throw py::value_error(fmt::format("pointer {:#x} is not GPU memory", p));
  return a.device;
}

// The MSD sort waits on the host for its prefix counts; the others only queue their work.
Report queued(std::string operation, std::size_t n, DType t, int device, std::uintptr_t stream,
              DeviceSortPath path = DeviceSortPath::cub_radix) {
  Report r;
  r.operation = std::move(operation);
  r.note(fmt::format("{} {} elements on gpu{} ({} sort), queued on stream {:#x}: {}", to_string(t), n, device,
                     to_string(path), stream,
                     path == DeviceSortPath::msd_radix ? "the host waited for the keys' prefix counts only"
                                                       : "no host synchronisation"));
  r.details()["device"] = device;
  r.details()["stream"] = stream;
  r.details()["sort"] = std::string(to_string(path));
  return r;
}

SortOptions options(bool descending) {
  SortOptions o;
  o.descending = descending;
  return o;
}

Report sort_py(std::uintptr_t ptr, std::size_t n, const std::string& dtype, bool descending, bool nan_last,
               std::uintptr_t stream) {
  const DType t = parse_dtype(dtype);
  if (n == 0) return queued("sort", n, t, -1, stream, DeviceSortPath::none);
  const int dev = device_of(ptr);
  DeviceSortPath path = DeviceSortPath::none;
  without_gil([&] {
    gpu::DeviceGuard guard(dev);
    visit_key(t, [&](auto k) {
      using K = decltype(k);
      K* keys = reinterpret_cast<K*>(ptr);
      path = sort_device(keys, n, options(descending), stream_arg(stream));
      if (nan_last) move_leading_nans_last_device<K, void>(keys, nullptr, n, stream_arg(stream));
    });
  });
  return queued("sort", n, t, dev, stream, path);
}

// A sorted copy: src is left as it is, out receives the keys sorted (no separate copy pass).
Report sort_copy_py(std::uintptr_t src, std::uintptr_t out, std::size_t n, const std::string& dtype, bool descending,
                    bool nan_last, std::uintptr_t stream) {
  const DType t = parse_dtype(dtype);
  if (n == 0) return queued("sort", n, t, -1, stream, DeviceSortPath::none);
  const int dev = device_of(src);
  if (device_of(out) != dev) throw py::value_error("input and output are on different GPUs");
  DeviceSortPath path = DeviceSortPath::none;
  without_gil([&] {
    gpu::DeviceGuard guard(dev);
    visit_key(t, [&](auto k) {
      using K = decltype(k);
      K* keys = reinterpret_cast<K*>(out);
      path = sort_device_copy(reinterpret_cast<const K*>(src), keys, n, options(descending), stream_arg(stream));
      if (nan_last) move_leading_nans_last_device<K, void>(keys, nullptr, n, stream_arg(stream));
    });
  });
  return queued("sort", n, t, dev, stream, path);
}

Report sort_pairs_py(std::uintptr_t keys_ptr, std::uintptr_t values_ptr, std::size_t value_size, std::size_t n,
                     const std::string& dtype, bool descending, bool nan_last, std::uintptr_t stream) {
  const DType t = parse_dtype(dtype);
  if (value_size != 4 && value_size != 8)
    throw py::type_error(fmt::format("values: {}-byte elements (expected 4 or 8)", value_size));
  if (n == 0) return queued("sort_by_key", n, t, -1, stream, DeviceSortPath::none);
  const int dev = device_of(keys_ptr);
  if (device_of(values_ptr) != dev) throw py::value_error("keys and values are on different GPUs");
  without_gil([&] {
    gpu::DeviceGuard guard(dev);
    visit_key(t, [&](auto k) {
      using K = decltype(k);
      K* keys = reinterpret_cast<K*>(keys_ptr);
      auto run = [&](auto* values) {
        using V = std::remove_pointer_t<decltype(values)>;
        sort_pairs_device(keys, values, n, options(descending), stream_arg(stream));
        if (nan_last) move_leading_nans_last_device<K, V>(keys, values, n, stream_arg(stream));
      };
      if (value_size == 4) run(reinterpret_cast<std::uint32_t*>(values_ptr));
      else run(reinterpret_cast<std::uint64_t*>(values_ptr));
    });
  });
  return queued("sort_by_key", n, t, dev, stream);
}

Report argsort_py(std::uintptr_t src, std::uintptr_t scratch, std::uintptr_t positions, std::size_t n,
                  const std::string& dtype, bool descending, bool nan_last, std::uintptr_t stream) {
  const DType t = parse_dtype(dtype);
  if (n == 0) return queued("argsort", n, t, -1, stream, DeviceSortPath::none);
  const int dev = device_of(src);
  without_gil([&] {
    gpu::DeviceGuard guard(dev);
    visit_key(t, [&](auto k) {
      using K = decltype(k);
      K* keys = reinterpret_cast<K*>(scratch);
      auto* pos = reinterpret_cast<std::uint64_t*>(positions);
      argsort_prepare_device(reinterpret_cast<const K*>(src), keys, pos, n, nan_last, stream_arg(stream));
      sort_pairs_device(keys, pos, n, options(descending), stream_arg(stream));
      if (nan_last) move_leading_nans_last_device<K, std::uint64_t>(keys, pos, n, stream_arg(stream));
    });
  });
  return queued("argsort", n, t, dev, stream);
}

// allocate(groups) returns six pointers (keys, count, sum, min, max, mean; 0: not wanted).
Report groupby_py(std::uintptr_t keys, const std::string& key_dtype, std::uintptr_t values,
                  const std::string& value_dtype, std::size_t n, std::uintptr_t stream, const py::function& allocate) {
  DeviceGroupByCall call;
  call.key_type = parse_dtype(key_dtype);
  call.keys = reinterpret_cast<const void*>(keys);
  call.has_values = values != 0;
  if (call.has_values) call.value_type = parse_dtype(value_dtype);
  call.values = reinterpret_cast<const void*>(values);
  call.n = n;
  call.stream = stream_arg(stream);
  call.allocate = [&allocate](std::size_t groups) {
    py::gil_scoped_acquire gil;
    const auto p = allocate(groups).cast<std::vector<std::uintptr_t>>();
    if (p.size() != 6) throw py::value_error("groupby: the allocator must return six pointers");
    return DeviceGroupOutputs{reinterpret_cast<void*>(p[0]), reinterpret_cast<std::int64_t*>(p[1]),
                              reinterpret_cast<void*>(p[2]), reinterpret_cast<void*>(p[3]),
                              reinterpret_cast<void*>(p[4]), reinterpret_cast<double*>(p[5])};
  };
  const int dev = n ? device_of(keys) : 0;
  if (call.has_values && n && device_of(values) != dev) throw py::value_error("keys and values are on different GPUs");
  return without_gil([&] {
    gpu::DeviceGuard guard(dev);
    return groupby_device(call);
  });
}

}  // namespace

void bind_device(py::module_& m) {
  m.def("_device_sort", &sort_py, py::arg("ptr"), py::arg("n"), py::arg("dtype"), py::arg("descending"),
        py::arg("nan_last"), py::arg("stream"));
  m.def("_device_sort_copy", &sort_copy_py, py::arg("src"), py::arg("out"), py::arg("n"), py::arg("dtype"),
        py::arg("descending"), py::arg("nan_last"), py::arg("stream"));
  m.def("_device_sort_pairs", &sort_pairs_py, py::arg("keys"), py::arg("values"), py::arg("value_size"), py::arg("n"),
        py::arg("dtype"), py::arg("descending"), py::arg("nan_last"), py::arg("stream"));
  m.def("_device_argsort", &argsort_py, py::arg("src"), py::arg("scratch"), py::arg("positions"), py::arg("n"),
        py::arg("dtype"), py::arg("descending"), py::arg("nan_last"), py::arg("stream"));
  m.def("_device_groupby", &groupby_py, py::arg("keys"), py::arg("key_dtype"), py::arg("values"),
        py::arg("value_dtype"), py::arg("n"), py::arg("stream"), py::arg("allocate"));
}
#else
void bind_device(py::module_&) {}
#endif

}  // namespace tandem::python
