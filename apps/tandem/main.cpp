// tandem: CPU and GPU data processing in tandem. Each subcommand lives in its own cmd_*.cpp.
#include <algorithm>
#include <iostream>

#include <CLI/CLI.hpp>

#include "command.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/tune.hpp"

namespace tandem::cli {

namespace {
std::vector<Command>& command_list() {
  static std::vector<Command> v;
  return v;
}
std::vector<Command>& generator_list() {
  static std::vector<Command> v;
  return v;
}
std::vector<DemoPart>& demo_list() {
  static std::vector<DemoPart> v;
  return v;
}
}  // namespace

bool register_command(Command c) {
  command_list().push_back(std::move(c));
  return true;
}
const std::vector<Command>& commands() { return command_list(); }

bool register_generator(Command c) {
  generator_list().push_back(std::move(c));
  return true;
}
const std::vector<Command>& generators() { return generator_list(); }

bool register_demo_part(DemoPart p) {
  auto& v = demo_list();
  v.push_back(std::move(p));
  std::stable_sort(v.begin(), v.end(), [](const DemoPart& a, const DemoPart& b) { return a.order < b.order; });
  return true;
}
const std::vector<DemoPart>& demo_parts() { return demo_list(); }

void print_notices(const Report& r) {
  for (const auto& n : r.notices) std::cerr << "tandem: notice: " << n << '\n';
}

}  // namespace tandem::cli

int main(int argc, char** argv) {
  using namespace tandem::cli;
  CLI::App app{"tandem: sorting, MapReduce aggregation and top-k queries on the CPU and GPUs together"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "tandem 0.1.0");
  auto cmds = commands();
  std::sort(cmds.begin(), cmds.end(), [](const Command& a, const Command& b) { return a.name < b.name; });
  std::function<int()> action;
  for (const auto& c : cmds) {
    CLI::App* sub = app.add_subcommand(c.name, c.description);
    auto run = c.setup(*sub);
    sub->callback([&action, run] { action = run; });
  }
  if (!generators().empty()) {
    CLI::App* gen = app.add_subcommand("gen", "Generate test data sets");
    gen->require_subcommand(1);
    auto gens = generators();
    std::sort(gens.begin(), gens.end(), [](const Command& a, const Command& b) { return a.name < b.name; });
    for (const auto& g : gens) {
      CLI::App* sub = gen->add_subcommand(g.name, g.description);
      auto run = g.setup(*sub);
      sub->callback([&action, run] { action = run; });
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;  // bad usage
  } catch (const std::exception& e) {
    std::cerr << "tandem: error: " << e.what() << '\n';
    return tandem::exit_code_for(e);
  }
  int code = 0;
  try {
    code = action ? action() : 0;
  } catch (const std::exception& e) {
    std::cerr << "tandem: error: " << e.what() << '\n';
    code = tandem::exit_code_for(e);
  }
  for (const auto& w : tandem::TuningCache::global().warnings()) std::cerr << "tandem: " << w << '\n';
  return code;
}
