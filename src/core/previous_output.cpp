// PreviousOutput: an output's former content kept beside it until the run's own output is sure
// to stay, so that a run failing late can give the user back what the path held.
#include <unistd.h>

#include <filesystem>
#include <random>

#include <fmt/format.h>

#include "tandem/core/error.hpp"
#include "tandem/core/io.hpp"

namespace tandem::io {

namespace fs = std::filesystem;

PreviousOutput::PreviousOutput(std::string path) {
  fs::path p(path);
  if (!p.has_filename()) p = p.parent_path();  // "out/" names the folder "out"
  path_ = p.string();
  std::error_code ec;
  const auto st = fs::symlink_status(path_, ec);
  if (ec || !(fs::is_regular_file(st) || fs::is_directory(st))) return;
  std::random_device rd;
  const std::string kept = fmt::format("{}.previous-{}-{:x}", path_, ::getpid(), rd());
  // Links share the old files' data: the run replaces `path` by renaming new files over it,
  // which leaves the linked ones untouched.
  fs::copy(path_, kept, fs::copy_options::recursive | fs::copy_options::create_hard_links, ec);
  if (ec) {
    fs::remove_all(kept, ec);
    ec.clear();
    fs::copy(path_, kept, fs::copy_options::recursive, ec);
  }
  if (ec) {
    fs::remove_all(kept, ec);
    throw Error(fmt::format("{}: cannot keep its present content aside while the new one is written ({})", path_,
                            ec.message()));
  }
  kept_ = kept;
}

PreviousOutput::~PreviousOutput() {
  if (kept_.empty()) return;
  std::error_code ec;
  fs::remove_all(kept_, ec);
}

void PreviousOutput::restore() {
  if (kept_.empty()) return;
  std::error_code ec;
  fs::rename(kept_, path_, ec);
  if (ec)
    throw Error(
        fmt::format("{}: cannot put its former content back ({}); it is kept as {}", path_, ec.message(), kept_));
  kept_.clear();
}

}  // namespace tandem::io
