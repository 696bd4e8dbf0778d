#include "table/csv_pieces.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unordered_set>

#include <fmt/format.h>

#include "table/csv_scan.hpp"
#include "tandem/core/error.hpp"

namespace tandem::csv {
namespace {

// The start of the record after the first (or the last) line feed outside quotes in [b, e), b a
// record start; nullptr when there is none.
const char* record_start_after(const char* b, const char* e, char delimiter, bool first) {
  const char* found = nullptr;
  walk_outside_quotes(b, e, delimiter, [&](const char* p, const char* q) {
    const auto n = static_cast<std::size_t>(q - p);
    if (first) {
      if (const void* nl = std::memchr(p, '\n', n)) {
        found = static_cast<const char*>(nl) + 1;
        return false;
      }
    } else if (const void* nl = ::memrchr(p, '\n', n)) {
      found = static_cast<const char*>(nl) + 1;
    }
    return true;
  });
  return found;
}

ColumnType join(ColumnType a, ColumnType b) {
  if (a == ColumnType::str || b == ColumnType::str) return ColumnType::str;
  if (a == ColumnType::f64 || b == ColumnType::f64) return ColumnType::f64;
  return ColumnType::i64;
}

constexpr std::size_t kHeaderRead = std::size_t{1} << 16;

}  // namespace

const char* last_record_start(const char* b, const char* e, char delimiter) {
  const char* p = record_start_after(b, e, delimiter, false);
  return p ? p : b;
}

PieceReader::PieceReader(std::string path, CsvOptions options, std::size_t piece_bytes)
    : path_(std::move(path)), options_(std::move(options)), piece_bytes_(std::max<std::size_t>(piece_bytes, 1)) {
  file_ = std::fopen(path_.c_str(), "rb");
  if (file_ == nullptr) throw InputError(fmt::format("{}: cannot open ({})", path_, std::strerror(errno)));
  // The header: read until its line feed (a BOM before it is skipped by the walk, not dropped).
  const std::size_t bom = 3;
  const char* end = nullptr;
  while (end == nullptr && fill(kHeaderRead)) {
    const std::size_t skip = text_.compare(0, bom, "\xEF\xBB\xBF") == 0 ? bom : 0;
    if (options_.delimiter == 0) delimiter_ = detect_delimiter(text_.data() + skip, text_.data() + text_.size());
    else delimiter_ = options_.delimiter;
    end = record_start_after(text_.data() + skip, text_.data() + text_.size(), delimiter_, true);
  }
  if (text_.empty()) throw InputError(fmt::format("{}: the file is empty (no header row)", path_));
  if (options_.delimiter == 0 && end == nullptr)
    delimiter_ = detect_delimiter(text_.data(), text_.data() + text_.size());
  header_bytes_ = end ? static_cast<std::size_t>(end - text_.data()) : text_.size();
}

PieceReader::~PieceReader() {
  if (file_ != nullptr) std::fclose(file_);
}

bool PieceReader::fill(std::size_t want) {
  if (at_end_) return false;
  const std::size_t had = text_.size();
  text_.resize(had + want);
  const std::size_t got = std::fread(text_.data() + had, 1, want, file_);
  text_.resize(had + got);
  if (got < want) {
    if (std::ferror(file_)) throw InputError(fmt::format("{}: read failed ({})", path_, std::strerror(errno)));
    at_end_ = true;
  }
  return got > 0;
}

void PieceReader::rewind() {
  if (std::fseek(file_, static_cast<long>(header_bytes_), SEEK_SET) != 0)
    throw InputError(fmt::format("{}: cannot read the file again from its start ({})", path_, std::strerror(errno)));
  text_.resize(header_bytes_);
  at_end_ = done_ = handed_out_any_ = false;
  lines_before_ = 0;
  ++passes_;
}

Table PieceReader::parse(const CsvSchema& schema) const {
  CsvOptions o = options_;
  o.schema = schema;
  o.delimiter = delimiter_;
  o.lines_skipped = lines_before_;
  return read_csv_text({text_.data(), piece_end_}, o, path_);
}

std::vector<ColumnType> PieceReader::join_types(const Table& t) {
  const std::size_t n = t.num_columns();
  known_.resize(n);
  saw_empty_.resize(n, false);
  std::unordered_set<std::string_view> fixed;
  for (const auto& s : options_.schema) fixed.insert(s.name);
  std::vector<ColumnType> target(n);
  for (std::size_t c = 0; c < n; ++c) {
    const Column& col = t.column(c);
    target[c] = col.type;
    if (fixed.count(col.name)) continue;
    const bool any_value = col.missing_count() < col.length;
    const bool only_empty = col.type == ColumnType::str && col.string_offsets().back() == 0;
    if (any_value && only_empty) saw_empty_[c] = true;
    if (any_value && !only_empty) known_[c] = known_[c] ? join(*known_[c], col.type) : col.type;
    target[c] = known_[c] ? *known_[c] : saw_empty_[c] ? ColumnType::str : ColumnType::i64;
  }
  return target;
}

void PieceReader::find_piece_end() {
  for (std::size_t window = piece_bytes_;; window *= 2) {  // grows only for a record longer than a piece
    while (text_.size() - header_bytes_ < window && fill(window - (text_.size() - header_bytes_))) {}
    const std::size_t body = text_.size() - header_bytes_;
    if (at_end_ && body <= window) {
      piece_end_ = text_.size();
      return;
    }
    const char* b = text_.data() + header_bytes_;
    if (const char* cut = record_start_after(b, b + window, delimiter_, false)) {
      piece_end_ = static_cast<std::size_t>(cut - text_.data());
      return;
    }
  }
}

std::optional<Table> PieceReader::next(bool& restarted, std::string* records) {
  restarted = false;
  for (;;) {
    if (done_) return std::nullopt;
    find_piece_end();
    if (piece_end_ == header_bytes_ && handed_out_any_) return std::nullopt;  // nothing after the last piece
    Table t = parse(options_.schema);
    const auto target = join_types(t);
    if (handed_out_any_ && target != used_) {  // earlier pieces had narrower types
      rewind();
      restarted = true;
      continue;
    }
    bool narrower = false;
    for (std::size_t c = 0; c < target.size(); ++c) narrower = narrower || t.column(c).type != target[c];
    if (narrower) {
      CsvSchema schema;
      for (std::size_t c = 0; c < target.size(); ++c) schema.push_back({t.column(c).name, target[c]});
      t = parse(schema);
    }
    used_ = target;
    handed_out_any_ = true;
    lines_before_ +=
        static_cast<std::size_t>(std::count(text_.data() + header_bytes_, text_.data() + piece_end_, '\n'));
    if (records) records->assign(text_.data() + header_bytes_, piece_end_ - header_bytes_);
    text_.erase(header_bytes_, piece_end_ - header_bytes_);
    done_ = at_end_ && text_.size() == header_bytes_;
    return t;
  }
}

}  // namespace tandem::csv
