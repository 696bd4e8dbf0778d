// tandem.Report: what an operation ran where, how long each stage took, and why.
#include <nlohmann/json.hpp>

#include "common.hpp"
#include "tandem/core/report.hpp"

namespace tandem::python {

void bind_report(py::module_& m) {
  py::class_<Stage>(m, "Stage", "One stage of an operation: its name, where it ran, its time in seconds and details.")
      .def_readonly("name", &Stage::name)
      .def_readonly("where", &Stage::where)
      .def_readonly("seconds", &Stage::seconds)
      .def_readonly("detail", &Stage::detail)
      .def("__repr__", [](const Stage& s) {
        return "Stage(" + py::repr(py::str(s.name)).cast<std::string>() +
               ", where=" + py::repr(py::str(s.where)).cast<std::string>() +
               ", seconds=" + py::repr(py::float_(s.seconds)).cast<std::string>() + ")";
      });
  py::class_<Report>(m, "Report", "What an operation did: its stages, notes on its choices and structured details.")
      .def_readonly("operation", &Report::operation)
      .def_readonly("stages", &Report::stages)
      .def_readonly("notes", &Report::notes)
      .def_property_readonly(
          "details", [](const Report& r) { return py::module_::import("json").attr("loads")(r.details().dump()); })
      .def_property_readonly("total_seconds", &Report::total_seconds)
      .def("to_dict", [](const Report& r) { return py::module_::import("json").attr("loads")(r.to_json().dump()); })
      .def("explain", &Report::explain, "A readable table of the stages and the notes.")
      .def("__str__", &Report::explain)
      .def("__repr__", [](const Report& r) {
        return "<tandem.Report " + r.operation + ": " + std::to_string(r.stages.size()) + " stages, " +
               std::to_string(r.notes.size()) + " notes>";
      });
}

}  // namespace tandem::python
