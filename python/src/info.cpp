// tandem.info: the machine as tandem sees it (CPU topology, CUDA devices), as a dict.
#include <nlohmann/json.hpp>

#include "common.hpp"
#include "tandem/core/device.hpp"

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
}

}  // namespace tandem::python
