// tandem: CPU and GPU data processing in tandem. Each subcommand lives in its own cmd_*.cpp.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

#include <CLI/CLI.hpp>

#include "command.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/io.hpp"
#include "tandem/core/parallel.hpp"
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

namespace {

// A closed standard stream would hand its number to the next file opened, and results meant for
// standard output would land in an output file. Such a stream gets /dev/null opened the wrong
// way round instead, so that every use of it fails and is reported.
bool stdout_was_closed = false;

void guard_standard_streams() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    ::open("/dev/null", fd == 0 ? O_WRONLY : O_RDONLY);
    stdout_was_closed = stdout_was_closed || fd == 1;
  }
}

// SIGINT, SIGTERM, SIGHUP, SIGPIPE: remove the outputs' temporary files, then die of the signal.
extern "C" void on_fatal_signal(int sig) {
  tandem::io::remove_temporaries();
  std::raise(sig);  // the handler was reset on entry: the default action ends the process
}

void remove_temporaries_on_signals() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;  // e.g. under nohup
    struct sigaction sa {};
    sa.sa_handler = on_fatal_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    ::sigaction(sig, &sa, nullptr);
  }
}

int report(const std::exception& e) {
  if (dynamic_cast<const std::bad_alloc*>(&e))  // a HostMemoryError says "out of memory" itself
    std::cerr << "tandem: error: "
              << (std::string_view(e.what()).find("out of memory") != std::string_view::npos
                      ? std::string(e.what())
                      : "out of memory (" + std::string(e.what()) + ")")
              << '\n';
  else if (dynamic_cast<const std::length_error*>(&e))
    std::cerr << "tandem: error: a size is too large to allocate (" << e.what() << ")\n";
  else if (const auto* s = dynamic_cast<const std::system_error*>(&e);
           s && s->code() == std::errc::resource_unavailable_try_again)  // a thread's stack could not be mapped
    std::cerr << "tandem: error: out of memory or threads: a thread could not start (" << e.what() << ")\n";
  else std::cerr << "tandem: error: " << e.what() << '\n';
  return tandem::exit_code_for(e);
}

// Results written to standard output are checked after the last write: a full disk or a closed
// stream is an error, not a silent loss.
int check_standard_output(int rc) {
  errno = 0;
  std::cout.flush();
  if (std::cout && std::fflush(stdout) == 0 && !std::ferror(stdout)) return rc;
  if (rc != 0) return rc;  // the command failed and said why (a write to "-" that failed included)
  const int err = errno;
  const char* why = stdout_was_closed ? "it is closed" : err ? std::strerror(err) : "write error";
  std::cerr << "tandem: error: standard output: write failed (" << why << ")\n";
  return rc ? rc : 1;
}

int run(int argc, char** argv) {
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
    std::cerr << "tandem: error: " << e.what() << "\nRun with --help for more information.\n";
    return 2;  // bad usage
  } catch (const std::exception& e) {
    return report(e);
  }
  int code = 0;
  try {
    if (action) tandem::check_thread_environment();  // TANDEM_THREADS is checked as --threads is
    code = action ? action() : 0;
  } catch (const std::exception& e) {
    code = report(e);
  }
  for (const auto& w : tandem::TuningCache::global().warnings()) std::cerr << "tandem: " << w << '\n';
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  guard_standard_streams();
  remove_temporaries_on_signals();
  // A run ended by exit() from inside a library (OpenMP's "Thread creation failed" under a memory
  // limit) destroys no AtomicOutput: its temporaries go here.
  std::atexit([] { tandem::io::remove_temporaries(); });
  // Past a file size limit (ulimit -f) a write fails with EFBIG and is reported like a full disk,
  // its temporary removed, instead of the signal ending the process with the temporary left.
  std::signal(SIGXFSZ, SIG_IGN);
  return check_standard_output(run(argc, argv));
}
