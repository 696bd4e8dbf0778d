// tandem.info: the machine as tandem sees it (CPU topology, CUDA devices), as a dict.
#include <nlohmann/json.hpp>

#include "common.hpp"
#include "tandem/core/device.hpp"
#include "tandem/core/memory.hpp"

namespace tandem::python {

void bind_info(py::module_& m) {
  m.def(
      "_info",
      [] {
        const SystemInfo s = without_gil([] { return system_info(); });
        nlohmann::json j = s;
        return j.dump();
      },
      "tandem::system_info() as JSON text.");
  m.def(
      "_describe", [] { return describe(system_info()); }, "tandem::system_info() as readable text.");
  m.def(
      "_cached_memory",
      [] {
        const CachedMemory c = cached_memory();
        return py::make_tuple(c.scratch_bytes, c.word_table_bytes);
      },
      "tandem::cached_memory() as (scratch bytes, word table bytes).");
  m.def(
      "_release_cached_memory",
      [] {
        py::gil_scoped_release unlocked;
        release_cached_memory();
      },
      "tandem::release_cached_memory().");
}

}  // namespace tandem::python
