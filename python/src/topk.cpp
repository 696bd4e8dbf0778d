// tandem.topk: the k best objects of n ranked lists, from a TKL1 file or from numpy arrays.
#include <fmt/format.h>

#include "common.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/topk.hpp"

namespace tandem::python {
namespace {

topk::Options options(std::string_view algo, std::string_view device, int threads) {
  topk::Options o;
  o.algo = topk::parse_algo(algo);
  o.device = device_arg(device);
  o.threads = threads;
  return o;
}

py::tuple run(const topk::Lists& lists, std::uint64_t k, const std::string& agg, const topk::Options& o) {
  const auto a = topk::Aggregate::parse(agg, lists.n);
  topk::Result r = without_gil([&] { return topk::query(lists, k, a, o); });
  py::array_t<std::uint32_t> ids(static_cast<py::ssize_t>(r.items.size()));
  py::array_t<double> scores(static_cast<py::ssize_t>(r.items.size()));
  for (std::size_t i = 0; i < r.items.size(); ++i) {
    ids.mutable_data()[i] = r.items[i].id;
    scores.mutable_data()[i] = r.items[i].score;
  }
  return py::make_tuple(ids, scores, std::move(r.report));
}

py::tuple topk_file(const std::string& path, std::uint64_t k, const std::string& agg, std::string_view algo,
                    std::string_view device, int threads) {
  const auto o = options(algo, device, threads);
  topk::Lists lists = without_gil([&] { return topk::read_lists(path); });
  return run(lists, k, agg, o);
}

// ids[i, j], scores[i, j]: the j-th entry of list i (each list sorted by score, descending).
py::tuple topk_arrays(const py::array_t<std::uint32_t, py::array::c_style>& ids,
                      const py::array_t<float, py::array::c_style>& scores, std::uint64_t k, const std::string& agg,
                      std::string_view algo, std::string_view device, int threads) {
  if (ids.ndim() != 2 || scores.ndim() != 2 || ids.shape(0) != scores.shape(0) || ids.shape(1) != scores.shape(1))
    throw py::value_error(fmt::format("topk: ids and scores must be 2-D arrays of one shape (lists, objects)"));
  const auto o = options(algo, device, threads);
  const auto n = static_cast<std::size_t>(ids.shape(0)), m = static_cast<std::size_t>(ids.shape(1));
  if (n == 0 || n > topk::kMaxLists)
    throw py::value_error(fmt::format("topk: {} lists (expected 1 to {})", n, topk::kMaxLists));
  topk::Lists lists;
  lists.n = static_cast<std::uint32_t>(n);
  lists.m = m;
  lists.entries.resize(n * m);
  const std::uint32_t* id = ids.data();
  const float* sc = scores.data();
  without_gil([&] {
    for (std::size_t i = 0; i < n * m; ++i) lists.entries[i] = {id[i], sc[i]};
    topk::validate(lists);
  });
  return run(lists, k, agg, o);
}

}  // namespace

void bind_topk(py::module_& m) {
  m.def("_topk_file", &topk_file, py::arg("path"), py::arg("k"), py::arg("agg"), py::arg("algo"), py::arg("device"),
        py::arg("threads"), "Top-k of the lists in a TKL1 file: (ids, scores, Report).");
  m.def("_topk_arrays", &topk_arrays, py::arg("ids"), py::arg("scores"), py::arg("k"), py::arg("agg"), py::arg("algo"),
        py::arg("device"), py::arg("threads"),
        "Top-k of lists given as 2-D id and score arrays: (ids, scores, Report).");
}

}  // namespace tandem::python
