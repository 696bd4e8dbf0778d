#include "tandem/core/report.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tandem/core/format.hpp"

namespace tandem {

Report::Report() = default;
Report::Report(const Report& o)
    : operation(o.operation),
      stages(o.stages),
      notes(o.notes),
      notices(o.notices),
      details_(o.details_ ? std::make_unique<nlohmann::json>(*o.details_) : nullptr) {}
Report::Report(Report&& o) noexcept = default;
Report& Report::operator=(const Report& o) {
  if (this != &o) *this = Report(o);
  return *this;
}
Report& Report::operator=(Report&& o) noexcept = default;
Report::~Report() = default;

nlohmann::json& Report::details() {
  if (!details_) details_ = std::make_unique<nlohmann::json>(nlohmann::json::object());
  return *details_;
}

const nlohmann::json& Report::details() const {
  static const nlohmann::json empty = nlohmann::json::object();
  return details_ ? *details_ : empty;
}

void Report::add(std::string name, std::string where, double seconds, std::string detail) {
  stages.push_back({std::move(name), std::move(where), seconds, std::move(detail)});
}

void Report::note(std::string text) { notes.push_back(std::move(text)); }

void Report::notice(std::string text) {
  notices.push_back(text);
  notes.push_back(std::move(text));
}

double Report::total_seconds() const {
  double t = 0;
  for (const auto& s : stages) t += s.seconds;
  return t;
}

std::string Report::explain() const {
  std::string out = fmt::format("{}:\n", operation.empty() ? "operation" : operation);
  for (const auto& n : notes) out += fmt::format("  - {}\n", n);
  if (!stages.empty()) {
    out += fmt::format("  {:<28} {:<10} {:>10}  {}\n", "stage", "where", "time", "detail");
    for (const auto& s : stages)
      out += fmt::format("  {:<28} {:<10} {:>10}  {}\n", s.name, s.where, human_seconds(s.seconds), s.detail);
  }
  return out;
}

nlohmann::json Report::to_json() const {
  nlohmann::json st = nlohmann::json::array();
  for (const auto& s : stages)
    st.push_back({{"name", s.name}, {"where", s.where}, {"seconds", s.seconds}, {"detail", s.detail}});
  return {{"operation", operation}, {"stages", st}, {"notes", notes}, {"notices", notices}, {"details", details()}};
}

}  // namespace tandem
