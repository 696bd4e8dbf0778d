// tandem.wordcount: word frequencies of bytes in memory (used in place) or of files.
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "common.hpp"
#include "tandem/mapreduce.hpp"

namespace tandem::python {
namespace {

py::tuple result(mapreduce::WordCount& r, std::size_t top) {
  const std::size_t n = top ? std::min(top, r.words.size()) : r.words.size();
  py::array words(py::dtype("O"), {static_cast<py::ssize_t>(n)}, {});
  py::array_t<std::int64_t> counts(static_cast<py::ssize_t>(n));
  auto** objs = static_cast<PyObject**>(words.mutable_data());
  auto* c = counts.mutable_data();
  for (std::size_t i = 0; i < n; ++i) {
    const auto& [w, k] = r.words[i];
    PyObject* s = PyUnicode_DecodeUTF8(w.data(), static_cast<Py_ssize_t>(w.size()), "surrogateescape");
    if (!s) throw py::error_already_set();
    Py_XDECREF(objs[i]);
    objs[i] = s;
    c[i] = static_cast<std::int64_t>(k);
  }
  r.report.details()["total_words"] = r.total_words;
  r.report.details()["distinct_words"] = r.words.size();
  return py::make_tuple(words, counts, std::move(r.report));
}

mapreduce::WordCountOptions options(bool lowercase, std::string_view device, int threads) {
  mapreduce::WordCountOptions o;
  o.lowercase = lowercase;
  o.engine.device = device_arg(device);
  o.engine.threads = threads;
  return o;
}

py::tuple wordcount_buffer(const py::buffer& text, std::size_t top, bool lowercase, std::string_view device,
                           int threads) {
  const py::buffer_info b = text.request();
  if (b.ndim != 1 || b.itemsize != 1 || b.strides[0] != 1)
    throw py::value_error("wordcount: expected contiguous bytes (bytes, bytearray, memoryview or a uint8 array)");
  const auto o = options(lowercase, device, threads);
  const std::string_view view(static_cast<const char*>(b.ptr), static_cast<std::size_t>(b.size));
  auto r = without_gil([&] { return mapreduce::wordcount(view, o); });
  return result(r, top);
}

py::tuple wordcount_files(const std::vector<std::string>& paths, std::size_t top, bool lowercase,
                          std::string_view device, int threads) {
  const auto o = options(lowercase, device, threads);
  auto r = without_gil([&] { return mapreduce::wordcount_files(paths, o); });
  return result(r, top);
}

}  // namespace

void bind_wordcount(py::module_& m) {
  m.def("_wordcount_buffer", &wordcount_buffer, py::arg("text"), py::arg("top"), py::arg("lowercase"),
        py::arg("device"), py::arg("threads"), "Word count of bytes in memory: (words, counts, Report).");
  m.def("_wordcount_files", &wordcount_files, py::arg("paths"), py::arg("top"), py::arg("lowercase"), py::arg("device"),
        py::arg("threads"), "Word count of files read one after another: (words, counts, Report).");
}

}  // namespace tandem::python
