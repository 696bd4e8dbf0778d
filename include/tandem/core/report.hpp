// What an operation did: the stages it ran, where, how long, and notes on its choices.
// Every public operation returns one; the CLI prints it for --explain.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace tandem {

struct Stage {
  std::string name;   // "H2D copy", "GPU sort", "CPU merge"
  std::string where;  // "cpu", "gpu0", "cpu+gpu0"
  double seconds{0};
  std::string detail;  // free text: sizes, parameters
};

struct Report {
  std::string operation;  // "sort", "wordcount", ...
  std::vector<Stage> stages;
  std::vector<std::string> notes;  // choices and why ("GPU-only: k=0.004 below break-even")
  // What the caller should hear of even without asking for the notes, such as a fallback to the
  // CPU; each is a note too. The library never prints: the CLI writes these to stderr.
  std::vector<std::string> notices;

  Report();
  Report(const Report& o);
  Report(Report&& o) noexcept;
  Report& operator=(const Report& o);
  Report& operator=(Report&& o) noexcept;
  ~Report();

  // Structured extras for --json, a JSON object. Reading or writing them needs
  // <nlohmann/json.hpp>; this header declares the type only, so users of sort.hpp & co. do not
  // compile all of nlohmann/json.
  nlohmann::json& details();
  const nlohmann::json& details() const;

  void add(std::string name, std::string where, double seconds, std::string detail = {});
  void note(std::string text);
  void notice(std::string text);  // a note that is also a notice
  double total_seconds() const;
  std::string explain() const;  // a readable table of stages and the notes
  nlohmann::json to_json() const;

 private:
  std::unique_ptr<nlohmann::json> details_;  // created on first use
};

}  // namespace tandem
