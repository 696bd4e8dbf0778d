// bench::spawn_quiet and bench::groupby_csv_file (processes.hpp).
#include "processes.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "tandem/groupby.hpp"
#include "tandem/table/csv.hpp"

extern char** environ;

namespace tandem::bench {

int spawn_quiet(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t quiet;
  posix_spawn_file_actions_init(&quiet);
  posix_spawn_file_actions_addopen(&quiet, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int r = posix_spawn(&pid, argv[0], &quiet, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&quiet);
  if (r != 0) return -1;
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string groupby_csv_file(const std::string& dir, std::size_t rows, std::size_t k) {
  const std::string path = fmt::format("{}/tandem-groupby-{}-{}.csv", dir, rows, k);
  if (std::filesystem::exists(path)) return path;
  const Table t = generate_groupby_table({.rows = rows, .k = k});
  {
    std::ofstream out(path + ".part", std::ios::binary);
    write_csv(out, t);
  }
  std::filesystem::rename(path + ".part", path);
  return path;
}

}  // namespace tandem::bench
