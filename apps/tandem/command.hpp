// Subcommands and demo parts register themselves from their own files, so adding a capability
// to the CLI touches no shared file.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "tandem/core/report.hpp"

namespace tandem::cli {

// setup() adds options to the subcommand and returns the action to run once parsing succeeded.
// The action returns the exit code; exceptions are mapped by main (UsageError/InputError -> 2).
struct Command {
  std::string name;
  std::string description;
  std::function<std::function<int()>(CLI::App&)> setup;
};

bool register_command(Command c);
const std::vector<Command>& commands();

// Data generators appear as `tandem gen <name>` (e.g. `tandem gen topk`, `tandem gen zipf`).
bool register_generator(Command c);
const std::vector<Command>& generators();

// A part of `tandem demo`: runs the capability on generated data, prints what ran where, how
// long it took and whether the result checked out. Returns false when the check failed.
struct DemoPart {
  int order;  // parts run in increasing order
  std::string name;
  std::function<bool()> run;
};

bool register_demo_part(DemoPart p);
const std::vector<DemoPart>& demo_parts();

// Writes the report's notices (fallbacks the user should hear of) to stderr.
void print_notices(const Report& r);

}  // namespace tandem::cli
