// Sorts of numpy arrays: in place on the caller's memory (tandem::sort / sort_pairs), and argsort
// through a scratch copy of the keys carrying their positions.
#include <fmt/format.h>

#include <memory>

#include "common.hpp"
#include "nan_order.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/sort.hpp"

namespace tandem::python {
namespace {

SortOptions sort_options(bool descending, std::string_view device, int threads) {
  SortOptions o;
  o.descending = descending;
  o.device = device_arg(device);
  o.threads = threads;
  return o;
}

template <class K, class V>
void place_nans(std::span<K> keys, std::span<V> values, bool nan_last, Report& r) {
  if (!nan_last) return;
  Stopwatch w;
  if (const std::size_t moved = move_leading_nans_last(keys, values))
    r.add("NaNs to the end", "cpu", w.seconds(), fmt::format("{} NaNs moved behind the numbers", moved));
}

Report sort_array(const py::array& a, bool descending, std::string_view device, int threads, bool nan_last) {
  const ArrayView v = key_array(a, "sort", true);
  const SortOptions o = sort_options(descending, device, threads);
  return without_gil([&] {
    return visit_key(v.dtype, [&](auto t) {
      using K = decltype(t);
      std::span<K> keys(static_cast<K*>(v.data), v.size);
      Report r = tandem::sort(keys, o);
      place_nans(keys, std::span<std::uint32_t>{}, nan_last, r);
      return r;
    });
  });
}

Report sort_pairs_arrays(const py::array& keys_arr, const py::array& values_arr, bool descending,
                         std::string_view device, int threads, bool nan_last) {
  const ArrayView k = key_array(keys_arr, "keys", true);
  const ArrayView v = bits_array(values_arr, "values", true);
  if (k.size != v.size) throw py::value_error(fmt::format("sort_by_key: {} keys but {} values", k.size, v.size));
  const SortOptions o = sort_options(descending, device, threads);
  return without_gil([&] {
    return visit_key(k.dtype, [&](auto t) {
      using K = decltype(t);
      std::span<K> keys(static_cast<K*>(k.data), k.size);
      auto run = [&](auto* values) {
        using V = std::remove_pointer_t<decltype(values)>;
        std::span<V> vals(values, v.size);
        Report r = tandem::sort_pairs(keys, vals, o);
        place_nans(keys, vals, nan_last, r);
        return r;
      };
      return v.dtype == DType::u32 ? run(static_cast<std::uint32_t*>(v.data))
                                   : run(static_cast<std::uint64_t*>(v.data));
    });
  });
}

// A sorted copy of a 1-D contiguous array of a key type: the whole call in C++, so that sorting
// a few elements costs little more than the library's own dispatch. None for any other array (the
// caller takes the general path).
py::object sort_copy(const py::array& a, bool descending, std::string_view device, int threads, bool nan_last,
                     bool explain) {
  if (!key_dtype(a.dtype()) || a.ndim() != 1 || !in_place_layout(a)) return py::none();
  const ArrayView v = key_array(a, "sort", false);
  py::array out(a.dtype(), {static_cast<py::ssize_t>(v.size)}, {});
  void* dst = out.mutable_data();
  const SortOptions o = sort_options(descending, device, threads);
  // The sort reads `a` in its first pass and writes the new array: no copy of its own.
  Report r = without_gil([&] {
    return visit_key(v.dtype, [&](auto t) {
      using K = decltype(t);
      std::span<K> keys(static_cast<K*>(dst), v.size);
      Report rep = tandem::sort_copy(std::span<const K>(static_cast<const K*>(v.data), v.size), keys, o);
      place_nans(keys, std::span<std::uint32_t>{}, nan_last, rep);
      return rep;
    });
  });
  if (!explain) return out;
  return py::make_tuple(std::move(out), std::move(r));
}

// The permutation that sorts `a` (stable), as int64 positions.
py::tuple argsort_array(const py::array& a, bool descending, std::string_view device, int threads, bool nan_last) {
  const ArrayView v = key_array(a, "argsort", false);
  const SortOptions o = sort_options(descending, device, threads);
  py::array_t<std::int64_t> order(static_cast<py::ssize_t>(v.size));
  auto* idx = reinterpret_cast<std::uint64_t*>(order.mutable_data());
  Report r = without_gil([&] {
    return visit_key(v.dtype, [&](auto t) {
      using K = decltype(t);
      const K* in = static_cast<const K*>(v.data);
      const std::int64_t n = static_cast<std::int64_t>(v.size);
      Stopwatch w;
      auto scratch = std::make_unique_for_overwrite<K[]>(v.size);
      const int T = n < (std::int64_t{1} << 16) ? 1 : (threads > 0 ? threads : default_threads());
#pragma omp parallel for num_threads(T) schedule(static)
      for (std::int64_t i = 0; i < n; ++i) {
        scratch[i] = nan_last ? numpy_equal_key(in[i]) : in[i];
        idx[i] = static_cast<std::uint64_t>(i);
      }
      const double prepare_s = w.seconds();
      std::span<K> keys(scratch.get(), v.size);
      std::span<std::uint64_t> positions(idx, v.size);
      Report rep = tandem::sort_pairs(keys, positions, o);
      rep.operation = "argsort";
      rep.stages.insert(rep.stages.begin(),
                        Stage{"copy keys, number positions", "cpu", prepare_s, fmt::format("{} keys", v.size)});
      place_nans(keys, positions, nan_last, rep);
      return rep;
    });
  });
  return py::make_tuple(std::move(order), std::move(r));
}

}  // namespace

void bind_sort(py::module_& m) {
  m.def("_sort", &sort_array, py::arg("a"), py::arg("descending"), py::arg("device"), py::arg("threads"),
        py::arg("nan_last"),
        "Sorts a 1-D contiguous array in place (checked: dtype, layout, writeable); returns the Report.");
  m.def("_sort_copy", &sort_copy, py::arg("a"), py::arg("descending"), py::arg("device"), py::arg("threads"),
        py::arg("nan_last"), py::arg("explain"),
        "A sorted copy of a 1-D contiguous array of a key type: the array, or (array, Report) with explain.");
  m.def("_sort_pairs", &sort_pairs_arrays, py::arg("keys"), py::arg("values"), py::arg("descending"), py::arg("device"),
        py::arg("threads"), py::arg("nan_last"),
        "Sorts keys in place and moves the 4- or 8-byte values (any dtype, as bits) with them; returns the Report.");
  m.def("_argsort", &argsort_array, py::arg("a"), py::arg("descending"), py::arg("device"), py::arg("threads"),
        py::arg("nan_last"), "The stable sorting permutation of a 1-D contiguous array: (int64 positions, Report).");
}

}  // namespace tandem::python
