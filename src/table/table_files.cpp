// Columns from array files and tables as folders of .npy files (layout in tandem/table/files.hpp).
#include "tandem/table/files.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tandem/core/error.hpp"
#include "tandem/core/io.hpp"

namespace tandem {
namespace {

namespace fs = std::filesystem;

struct ColumnFiles {
  fs::path values, offsets, bytes, valid;
};

ColumnFiles files_of(const fs::path& dir, const std::string& name) {
  return {dir / (name + ".npy"), dir / (name + ".offsets.npy"), dir / (name + ".bytes"), dir / (name + ".valid.npy")};
}

// Every column's name can name its files, and no two columns' files are the same.
void check_file_names(const Table& t) {
  std::set<std::string> used{"table.json"};
  for (const auto& c : t.columns()) {
    if (c.name.empty() || c.name == "." || c.name == ".." ||
        c.name.find_first_of(std::string("/\0", 2)) != std::string::npos)
      throw UsageError(fmt::format("column '{}': its name cannot name a file", c.name));
    std::vector<std::string> names;
    if (c.type == ColumnType::str) names = {c.name + ".offsets.npy", c.name + ".bytes"};
    else names = {c.name + ".npy"};
    names.push_back(c.name + ".valid.npy");  // reserved even with no missing value: the check depends on names only
    for (const auto& n : names)
      if (!used.insert(n).second)
        throw UsageError(fmt::format("column '{}': its file {} is another column's too", c.name, n));
  }
}

void write_column(const fs::path& dir, const Column& c) {
  const ColumnFiles f = files_of(dir, c.name);
  if (c.type == ColumnType::str) {
    const auto offsets = c.string_offsets();
    io::write_array(f.offsets.string(), DType::u64, offsets.data(), offsets.size());
    io::write_array(f.bytes.string(), DType::u8, c.values.data(), offsets.back());
  } else {
    io::write_array(f.values.string(), to_dtype(c.type), c.values.data(), c.length);
  }
  if (!c.validity.empty()) io::write_array(f.valid.string(), DType::u8, c.validity.data(), (c.length + 7) / 8);
}

void write_manifest(const fs::path& dir, const Table& t) {
  nlohmann::json columns = nlohmann::json::array();
  for (const auto& c : t.columns()) columns.push_back({{"name", c.name}, {"type", to_string(c.type)}});
  io::AtomicOutput out((dir / "table.json").string());
  out.stream() << nlohmann::json{{"rows", t.rows()}, {"columns", columns}}.dump(1) << '\n';
  out.commit();
}

// `dir` may be replaced: absent, an empty folder or a table folder.
void check_replaceable(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return;
  if (!fs::is_directory(dir, ec)) throw InputError(fmt::format("{}: exists and is not a folder", dir.string()));
  if (!fs::exists(dir / "table.json", ec) && !fs::is_empty(dir, ec))
    throw InputError(fmt::format(
        "{}: a folder that is neither empty nor a table folder (no table.json); not replacing it", dir.string()));
}

// A folder beside the target, removed unless it was renamed into place.
struct StagingFolder {
  fs::path path;
  explicit StagingFolder(const fs::path& target) {
    std::random_device rd;
    path = target;
    path += fmt::format(".tmp-{}-{:x}", ::getpid(), rd());
    std::error_code ec;
    if (!fs::create_directory(path, ec))
      throw InputError(fmt::format("{}: cannot create a folder beside it ({})", target.string(), ec.message()));
  }
  ~StagingFolder() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
  void move_to(const fs::path& target) {
    std::error_code ec;
    fs::path old;
    if (fs::exists(target, ec)) {
      old = path;
      old += ".old";
      fs::rename(target, old);
    }
    fs::rename(path, target);
    path.clear();
    if (!old.empty()) fs::remove_all(old, ec);
  }
};

fs::path folder_path(const std::string& dir) {
  fs::path p(dir);
  return p.has_filename() ? p : p.parent_path();  // "out/" names "out"
}

nlohmann::json read_manifest(const fs::path& dir) {
  const fs::path file = dir / "table.json";
  std::ifstream in(file);
  if (!in) throw InputError(fmt::format("{}: cannot open (is {} a table folder?)", file.string(), dir.string()));
  try {
    auto j = nlohmann::json::parse(in);
    (void)j.at("rows").get<std::size_t>();
    for (const auto& c : j.at("columns")) {
      (void)c.at("name").get<std::string>();
      (void)parse_column_type(c.at("type").get<std::string>());
    }
    return j;
  } catch (const std::exception& e) {  // json errors, an unknown type's UsageError
    throw InputError(fmt::format("{}: not a table manifest ({})", file.string(), e.what()));
  }
}

// A column's buffers are only read: they are the files' own pages, mapped (io::map_array).
Buffer file_buffer(io::MappedArray a) { return Buffer::borrow(a.data, a.bytes(), std::move(a.owner)); }

Column read_string_column(const std::string& name, const ColumnFiles& f, std::size_t rows) {
  io::MappedArray offsets = io::map_array(f.offsets.string(), DType::u64);
  if (offsets.count != rows + 1)
    throw InputError(
        fmt::format("{}: {} offsets for {} rows (expected {})", f.offsets.string(), offsets.count, rows, rows + 1));
  io::MappedArray bytes = io::map_array(f.bytes.string(), DType::u8);
  Column c;
  c.name = name;
  c.type = ColumnType::str;
  c.length = rows;
  c.values = file_buffer(std::move(bytes));
  c.offsets = file_buffer(std::move(offsets));
  return c;
}

}  // namespace

Column read_column(const std::string& name, const std::string& path, DType dtype) {
  const auto type = column_type_of(dtype);
  if (!type)
    throw UsageError(
        fmt::format("column '{}': {} is no column type (i32, i64, u32, u64, f32 or f64)", name, to_string(dtype)));
  io::MappedArray a = io::map_array(path, dtype);
  Column c;
  c.name = name;
  c.type = *type;
  c.length = a.count;
  c.values = file_buffer(std::move(a));
  c.validate();
  return c;
}

void write_table_folder(const std::string& dir, const Table& table) {
  const fs::path target = folder_path(dir);
  check_file_names(table);
  check_replaceable(target);
  StagingFolder staging(target);
  for (const auto& c : table.columns()) write_column(staging.path, c);
  write_manifest(staging.path, table);
  check_replaceable(target);
  staging.move_to(target);
}

Table read_table_folder(const std::string& dir) {
  const fs::path folder = folder_path(dir);
  const auto manifest = read_manifest(folder);
  const auto rows = manifest["rows"].get<std::size_t>();
  Table t;
  for (const auto& m : manifest["columns"]) {
    const auto name = m["name"].get<std::string>();
    const ColumnType type = parse_column_type(m["type"].get<std::string>());
    const ColumnFiles f = files_of(folder, name);
    Column c = type == ColumnType::str ? read_string_column(name, f, rows)
                                       : read_column(name, f.values.string(), to_dtype(type));
    if (c.length != rows)
      throw InputError(fmt::format("{}: {} values, table.json says {} rows", f.values.string(), c.length, rows));
    std::error_code ec;
    if (fs::exists(f.valid, ec)) {
      io::MappedArray v = io::map_array(f.valid.string(), DType::u8);
      if (v.count != (rows + 7) / 8)
        throw InputError(
            fmt::format("{}: {} bytes for {} rows (expected {})", f.valid.string(), v.count, rows, (rows + 7) / 8));
      c.validity = file_buffer(std::move(v));
    }
    c.validate();
    t.add(std::move(c));
  }
  return t;
}

}  // namespace tandem
