// The device passes of csv_device.hpp: quote state per segment, rows, fields, classes, values.
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "scan/gpu/csv_device.hpp"
#include "scan/gpu/csv_field.hpp"
#include "tandem/core/error.hpp"
#include "tandem/cuda/cub_call.hpp"
#include "tandem/cuda/launch.hpp"
#include "tandem/cuda/runtime.hpp"

namespace tandem::scan {
namespace {

constexpr unsigned kBlock = 256;
constexpr std::size_t kSegment = 64;             // bytes a thread scans for quotes and line breaks
constexpr std::uint32_t kQuotedBit = 1u << 31;   // field_len: the field was quoted
constexpr std::uint32_t kEscapedBit = 1u << 30;  // field_len: and holds "" escapes
constexpr std::uint32_t kLengthMask = kEscapedBit - 1;

unsigned blocks_for(std::size_t items) {
  return static_cast<unsigned>(std::max<std::size_t>(1, (items + kBlock - 1) / kBlock));
}

struct Xor {
  __device__ std::uint8_t operator()(std::uint8_t a, std::uint8_t b) const { return a ^ b; }
};

__global__ void segment_quote_parity(const char* s, std::size_t n, std::size_t segments, std::uint8_t* parity) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i >= segments) return;
  const std::size_t b = i * kSegment, e = min(n, b + kSegment);
  unsigned quotes = 0;
  for (std::size_t j = b; j < e; ++j) quotes += __ldg(s + j) == '"';
  parity[i] = quotes & 1u;
}

// Line breaks outside quotes per segment: their count, their positions from out[at[i]] on, or
// one past the last of them (0 where it has none); each output only where given.
__global__ void segment_line_breaks(const char* s, std::size_t n, std::size_t segments, const std::uint8_t* state,
                                    std::uint64_t* count, const std::uint64_t* at, std::uint64_t* out,
                                    std::uint64_t* last = nullptr) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i >= segments) return;
  const std::size_t b = i * kSegment, e = min(n, b + kSegment);
  unsigned quoted = state[i];
  std::uint64_t k = 0, after = 0;
  for (std::size_t j = b; j < e; ++j) {
    const char c = __ldg(s + j);
    if (c == '"') quoted ^= 1u;
    else if (c == '\n' && !quoted) {
      if (out) out[at[i] + k] = j;
      ++k;
      after = j + 1;
    }
  }
  if (count) count[i] = k;
  if (last) last[i] = after;
}

struct RowBounds {
  const char* s;
  std::size_t n;
  const std::uint64_t* ends;  // ends[r]: row r's line break (n for a last row without one)
  __device__ void of(std::size_t r, std::size_t& b, std::size_t& e) const {
    b = r == 0 ? 0 : ends[r - 1] + 1;
    e = ends[r];
    if (e < n && e > b && s[e - 1] == '\r') --e;  // CRLF
  }
};

__global__ void row_kept(RowBounds rows, std::size_t count, bool skip_blank, std::uint64_t* kept) {
  const std::size_t r = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (r >= count) return;
  std::size_t b, e;
  rows.of(r, b, e);
  kept[r] = !(skip_blank && b == e);
}

struct FieldOut {
  int columns;  // fields a row must have
  char delimiter;
  const int* slot_of;     // per file column: its wanted slot, or -1
  std::size_t rows;       // kept rows: the stride of the per-slot arrays
  std::uint64_t* begin;   // [slot * rows + row]
  std::uint32_t* length;  // with kQuotedBit / kEscapedBit
  std::uint8_t* cls;      // FieldClass of each wanted field
  unsigned* error;        // set when a row breaks the dialect's rules
};

__device__ std::uint8_t class_of(const char* s, std::size_t cb, std::size_t ce, bool quoted) {
  const std::uint32_t c = cb == ce && quoted ? kFieldQuotedEmpty : classify_unquoted(s + cb, s + ce);
  // A quoted field that reads as a number: whether the CPU reader takes it as one is its call.
  if (quoted && c != kFieldText && c != kFieldQuotedEmpty) return kFieldQuotedText;
  return static_cast<std::uint8_t>(c);
}

// One thread per row: its fields, checked as the CPU reader checks them.
__global__ void split_rows(RowBounds rows, std::size_t count, const std::uint64_t* kept_at, bool skip_blank,
                           FieldOut out) {
  const std::size_t r = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (r >= count) return;
  std::size_t p, end;
  rows.of(r, p, end);
  if (skip_blank && p == end) return;
  const std::size_t k = kept_at[r];
  const char* s = rows.s;
  int col = 0;
  for (;;) {
    std::size_t cb, ce;
    bool quoted = false, escaped = false;
    if (p < end && s[p] == '"') {
      quoted = true;
      cb = ++p;
      for (;;) {
        if (p >= end) return (void)atomicOr(out.error, 1u);  // unterminated within the row
        if (s[p] == '"') {
          if (p + 1 < end && s[p + 1] == '"') {
            escaped = true;
            p += 2;
            continue;
          }
          break;
        }
        ++p;
      }
      ce = p++;
      if (p < end && s[p] != out.delimiter) return (void)atomicOr(out.error, 1u);  // bytes after a closing quote
    } else {
      cb = p;
      while (p < end && s[p] != out.delimiter) {
        // A quote inside an unquoted field, or a carriage return not before a line feed.
        if (s[p] == '"' || s[p] == '\r') return (void)atomicOr(out.error, 1u);
        ++p;
      }
      ce = p;
    }
    if (col < out.columns) {
      const int w = out.slot_of[col];
      if (w >= 0 && ce - cb <= kLengthMask) {
        const std::size_t at = std::size_t(w) * out.rows + k;
        out.begin[at] = cb;
        out.length[at] =
            static_cast<std::uint32_t>(ce - cb) | (quoted ? kQuotedBit : 0u) | (escaped ? kEscapedBit : 0u);
        out.cls[at] = class_of(s, cb, ce, quoted);
      } else if (w >= 0) {
        atomicOr(out.error, 1u);  // a field of 1 GiB or more
      }
    }
    ++col;
    if (p >= end) break;
    ++p;  // the delimiter
  }
  if (col != out.columns) atomicOr(out.error, 1u);  // a ragged row
}

__global__ void or_classes(const std::uint8_t* cls, std::size_t rows, unsigned* out) {
  const std::size_t w = blockIdx.y;
  unsigned acc = 0;
  for (std::size_t r = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; r < rows;
       r += std::size_t(gridDim.x) * blockDim.x)
    acc |= cls[w * rows + r];
  acc = __reduce_or_sync(0xffffffffu, acc);
  if ((threadIdx.x & 31) == 0 && acc) atomicOr(out + w, acc);
}

// Validity words by warp ballot; missing rows counted.
__device__ void put_validity(std::size_t r, std::size_t rows, bool present, std::uint32_t* validity,
                             unsigned long long* missing) {
  const unsigned bits = __ballot_sync(0xffffffffu, present);
  const unsigned in_range = __ballot_sync(0xffffffffu, r < rows);
  if ((threadIdx.x & 31) == 0 && in_range) {
    validity[r / 32] = bits;
    const unsigned absent = __popc(in_range & ~bits);
    if (absent) atomicAdd(missing, absent);
  }
}

template <class T>
__global__ void convert_numbers(const char* s, const std::uint64_t* begin, const std::uint32_t* length,
                                const std::uint8_t* cls, std::size_t rows, T* values, std::uint32_t* validity,
                                unsigned long long* missing) {
  const std::size_t r = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;  // blockDim: a multiple of 32
  bool present = false;
  if (r < rows) {
    const unsigned c = cls[r];
    present = (c & (kFieldInteger | kFieldDecimal)) != 0;
    T v{};
    if (present) {
      const char* b = s + begin[r];
      const char* e = b + (length[r] & kLengthMask);
      if constexpr (std::is_same_v<T, double>) v = decimal_value(b, e);
      else v = static_cast<T>(integer_value(b, e));
    }
    values[r] = v;
  }
  put_validity(r, rows, present, validity, missing);
}

__device__ std::uint64_t string_bytes(const char* s, std::uint64_t b, std::uint32_t len) {
  std::uint64_t n = len & kLengthMask;
  if (len & kEscapedBit)
    for (std::uint64_t j = b; j + 1 < b + (len & kLengthMask); ++j)
      if (s[j] == '"') ++j, --n;  // "" holds one quote
  return n;
}

__global__ void string_lengths(const char* s, const std::uint64_t* begin, const std::uint32_t* length,
                               const std::uint8_t* cls, std::size_t rows, std::uint64_t* sizes, std::uint32_t* validity,
                               unsigned long long* missing) {
  const std::size_t r = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  bool present = false;
  if (r < rows) {
    present = cls[r] != kFieldMissing;
    sizes[r] = present ? string_bytes(s, begin[r], length[r]) : 0;
  }
  put_validity(r, rows, present, validity, missing);
}

__global__ void copy_strings(const char* s, const std::uint64_t* begin, const std::uint32_t* length, std::size_t rows,
                             const std::uint64_t* offsets, char* bytes) {
  const std::size_t r = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (r >= rows) return;
  const std::uint64_t b = begin[r], n = length[r] & kLengthMask;
  char* out = bytes + offsets[r];
  if (!(length[r] & kEscapedBit)) {
    for (std::uint64_t j = 0; j < n; ++j) out[j] = s[b + j];
    return;
  }
  for (std::uint64_t j = b; j < b + n; ++j) {
    *out++ = s[j];
    if (s[j] == '"') ++j;  // the second quote of ""
  }
}

// The rows: positions of the line breaks outside quotes (n appended for a last row without
// one). Empty optional-like result with needs_cpu set when a quote is left open.
struct Rows {
  gpu::DeviceBuffer<std::uint64_t> ends;
  std::size_t count{0};
  bool open_quote{false};
};

// The quote state each 64-byte segment of [s, s + n) starts in (the text starts outside quotes),
// and whether the text ends inside quotes.
struct QuoteStates {
  gpu::DeviceBuffer<std::uint8_t> state;
  std::size_t segments{0};
  bool open_at_end{false};
};

QuoteStates quote_states(const char* s, std::size_t n, cudaStream_t stream) {
  QuoteStates q;
  q.segments = (n + kSegment - 1) / kSegment;
  const std::size_t segments = q.segments;
  gpu::DeviceBuffer<std::uint8_t> parity(segments);
  q.state = gpu::DeviceBuffer<std::uint8_t>(segments);
  segment_quote_parity<<<blocks_for(segments), kBlock, 0, stream>>>(s, n, segments, parity.data());
  TANDEM_CUDA_LAUNCH("segment_quote_parity");
  gpu::run_cub("quote state scan", [&](void* t, std::size_t& b) {
    return cub::DeviceScan::ExclusiveScan(t, b, parity.data(), q.state.data(), Xor{}, std::uint8_t{0}, segments,
                                          stream);
  });
  const std::uint8_t last_state = gpu::read_value(q.state.data() + segments - 1, stream);
  const std::uint8_t last_parity = gpu::read_value(parity.data() + segments - 1, stream);
  q.open_at_end = (last_state ^ last_parity) != 0;
  return q;
}

Rows find_rows(const char* s, std::size_t n, cudaStream_t stream) {
  Rows rows;
  const QuoteStates q = quote_states(s, n, stream);
  const std::size_t segments = q.segments;
  const auto& state = q.state;
  rows.open_quote = q.open_at_end;
  if (rows.open_quote) return rows;
  gpu::DeviceBuffer<std::uint64_t> count(segments + 1);
  segment_line_breaks<<<blocks_for(segments), kBlock, 0, stream>>>(s, n, segments, state.data(), count.data(), nullptr,
                                                                   nullptr);
  TANDEM_CUDA_LAUNCH("segment_line_breaks (count)");
  TANDEM_CUDA(cudaMemsetAsync(count.data() + segments, 0, sizeof(std::uint64_t), stream));
  gpu::run_cub("line break scan", [&](void* t, std::size_t& b) {
    return cub::DeviceScan::ExclusiveSum(t, b, count.data(), count.data(), segments + 1, stream);
  });
  const std::size_t breaks = gpu::read_value(count.data() + segments, stream);
  char last = 0;
  TANDEM_CUDA(cudaMemcpyAsync(&last, s + n - 1, 1, cudaMemcpyDeviceToHost, stream));
  TANDEM_CUDA(cudaStreamSynchronize(stream));
  rows.count = breaks + (last != '\n');
  rows.ends = gpu::DeviceBuffer<std::uint64_t>(std::max<std::size_t>(rows.count, 1));
  segment_line_breaks<<<blocks_for(segments), kBlock, 0, stream>>>(s, n, segments, state.data(), nullptr, count.data(),
                                                                   rows.ends.data());
  TANDEM_CUDA_LAUNCH("segment_line_breaks (positions)");
  if (last != '\n') {
    const std::uint64_t end = n;
    TANDEM_CUDA(cudaMemcpyAsync(rows.ends.data() + breaks, &end, sizeof end, cudaMemcpyHostToDevice, stream));
    TANDEM_CUDA(cudaStreamSynchronize(stream));
  }
  return rows;
}

// The type a wanted column gets from its fields' classes; false where only the CPU can say.
bool decide_type(unsigned classes, bool fixed, ColumnType& type, std::string& why, const std::string& name) {
  if (fixed) {
    if (type == ColumnType::str) return true;
    const unsigned allowed =
        kFieldMissing | kFieldQuotedEmpty | kFieldInteger | (type == ColumnType::f64 ? kFieldDecimal : 0u);
    if ((type == ColumnType::i64 || type == ColumnType::f64) && (classes & ~allowed) == 0) return true;
    why = "column '" + name + "': values the device does not convert to " + std::string(to_string(type));
    return false;
  }
  if (classes & kFieldUnsure) {
    why = "column '" + name + "': a value only the CPU reader can classify";
    return false;
  }
  if (classes & kFieldText) type = ColumnType::str;
  else if (classes & kFieldQuotedText) {
    why = "column '" + name + "': a quoted value in a column of numbers";
    return false;
  } else if (classes & kFieldDecimal) type = ColumnType::f64;
  else if (classes & kFieldInteger) type = ColumnType::i64;
  else if (classes & kFieldQuotedEmpty) type = ColumnType::str;  // only "": empty strings, as the CPU reader reads them
  else type = ColumnType::i64;  // no values at all: all missing, as the CPU reader types such a column
  return true;
}

void convert_column(DeviceCsvColumn& col, const char* s, const std::uint64_t* begin, const std::uint32_t* length,
                    const std::uint8_t* cls, std::size_t rows, cudaStream_t stream) {
  col.validity = gpu::DeviceBuffer<std::uint32_t>(std::max<std::size_t>(1, (rows + 31) / 32));
  gpu::DeviceBuffer<unsigned long long> missing(1);
  TANDEM_CUDA(cudaMemsetAsync(missing.data(), 0, sizeof(unsigned long long), stream));
  if (col.type == ColumnType::str) {
    col.offsets = gpu::DeviceBuffer<std::uint64_t>(rows + 1);
    TANDEM_CUDA(cudaMemsetAsync(col.offsets.data() + rows, 0, sizeof(std::uint64_t), stream));
    string_lengths<<<blocks_for(rows), kBlock, 0, stream>>>(s, begin, length, cls, rows, col.offsets.data(),
                                                            col.validity.data(), missing.data());
    TANDEM_CUDA_LAUNCH("string_lengths");
    gpu::run_cub("string offsets scan", [&](void* t, std::size_t& b) {
      return cub::DeviceScan::ExclusiveSum(t, b, col.offsets.data(), col.offsets.data(), rows + 1, stream);
    });
    const std::size_t bytes = gpu::read_value(col.offsets.data() + rows, stream);
    col.values = gpu::DeviceBuffer<std::byte>(std::max<std::size_t>(bytes, 1));
    if (rows) {
      copy_strings<<<blocks_for(rows), kBlock, 0, stream>>>(s, begin, length, rows, col.offsets.data(),
                                                            reinterpret_cast<char*>(col.values.data()));
      TANDEM_CUDA_LAUNCH("copy_strings");
    }
  } else {
    col.values = gpu::DeviceBuffer<std::byte>(std::max<std::size_t>(rows, 1) * value_width(col.type));
    if (col.type == ColumnType::f64)
      convert_numbers<double><<<blocks_for(rows), kBlock, 0, stream>>>(s, begin, length, cls, rows,
                                                                       reinterpret_cast<double*>(col.values.data()),
                                                                       col.validity.data(), missing.data());
    else
      convert_numbers<std::int64_t><<<blocks_for(rows), kBlock, 0, stream>>>(
          s, begin, length, cls, rows, reinterpret_cast<std::int64_t*>(col.values.data()), col.validity.data(),
          missing.data());
    TANDEM_CUDA_LAUNCH("convert_numbers");
  }
  col.missing = gpu::read_value(missing.data(), stream);
}

}  // namespace

DeviceCsv parse_csv_device(const char* body, std::size_t n, const CsvLayout& layout,
                           const std::vector<std::size_t>& wanted, const std::vector<ColumnType>& types,
                           const std::vector<bool>& fixed, cudaStream_t stream) {
  DeviceCsv out;
  const int columns = static_cast<int>(layout.names.size());
  const bool skip_blank = columns >= 2;
  for (std::size_t w = 0; w < wanted.size(); ++w) {
    DeviceCsvColumn c;
    c.name = layout.names.at(wanted[w]);
    c.type = types.at(w);
    out.columns.push_back(std::move(c));
  }
  if (n == 0) {
    for (std::size_t w = 0; w < wanted.size(); ++w) {
      std::string why;
      decide_type(0, fixed[w], out.columns[w].type, why, out.columns[w].name);
      convert_column(out.columns[w], body, nullptr, nullptr, nullptr, 0, stream);
    }
    return out;
  }
  Rows raw = find_rows(body, n, stream);
  if (raw.open_quote) {
    out.needs_cpu = true;
    out.why = "a quote is left open";
    return out;
  }
  const RowBounds bounds{body, n, raw.ends.data()};
  gpu::DeviceBuffer<std::uint64_t> kept(raw.count + 1);
  row_kept<<<blocks_for(raw.count), kBlock, 0, stream>>>(bounds, raw.count, skip_blank, kept.data());
  TANDEM_CUDA_LAUNCH("row_kept");
  TANDEM_CUDA(cudaMemsetAsync(kept.data() + raw.count, 0, sizeof(std::uint64_t), stream));
  gpu::run_cub("kept rows scan", [&](void* t, std::size_t& b) {
    return cub::DeviceScan::ExclusiveSum(t, b, kept.data(), kept.data(), raw.count + 1, stream);
  });
  const std::size_t rows = gpu::read_value(kept.data() + raw.count, stream);
  out.rows = rows;

  std::vector<int> slot_of(columns, -1);
  for (std::size_t w = 0; w < wanted.size(); ++w) slot_of[wanted[w]] = static_cast<int>(w);
  gpu::DeviceBuffer<int> d_slot_of(columns);
  TANDEM_CUDA(cudaMemcpyAsync(d_slot_of.data(), slot_of.data(), columns * sizeof(int), cudaMemcpyHostToDevice, stream));
  const std::size_t fields = std::max<std::size_t>(1, wanted.size() * rows);
  gpu::DeviceBuffer<std::uint64_t> begin(fields);
  gpu::DeviceBuffer<std::uint32_t> length(fields);
  gpu::DeviceBuffer<std::uint8_t> cls(fields);
  gpu::DeviceBuffer<unsigned> flags(wanted.size() + 1);  // per wanted column's classes, then the error flag
  TANDEM_CUDA(cudaMemsetAsync(flags.data(), 0, flags.bytes(), stream));
  const FieldOut fo{columns,      layout.delimiter, d_slot_of.data(), rows,
                    begin.data(), length.data(),    cls.data(),       flags.data() + wanted.size()};
  split_rows<<<blocks_for(raw.count), kBlock, 0, stream>>>(bounds, raw.count, kept.data(), skip_blank, fo);
  TANDEM_CUDA_LAUNCH("split_rows");
  if (!wanted.empty() && rows) {
    const dim3 grid(std::min<unsigned>(blocks_for(rows), 1024), static_cast<unsigned>(wanted.size()));
    or_classes<<<grid, kBlock, 0, stream>>>(cls.data(), rows, flags.data());
    TANDEM_CUDA_LAUNCH("or_classes");
  }
  std::vector<unsigned> h_flags(wanted.size() + 1);
  TANDEM_CUDA(cudaMemcpyAsync(h_flags.data(), flags.data(), flags.bytes(), cudaMemcpyDeviceToHost, stream));
  TANDEM_CUDA(cudaStreamSynchronize(stream));
  if (h_flags.back()) {
    out.needs_cpu = true;
    out.why = "a row the device does not parse (ragged, or a quote out of place)";
    return out;
  }
  for (std::size_t w = 0; w < wanted.size(); ++w)
    if (!decide_type(h_flags[w], fixed[w], out.columns[w].type, out.why, out.columns[w].name)) {
      out.needs_cpu = true;
      return out;
    }
  for (std::size_t w = 0; w < wanted.size(); ++w)
    convert_column(out.columns[w], body, begin.data() + w * rows, length.data() + w * rows, cls.data() + w * rows, rows,
                   stream);
  TANDEM_CUDA(cudaStreamSynchronize(stream));
  return out;
}

std::size_t complete_rows_end(const char* body, std::size_t n, cudaStream_t stream) {
  if (n == 0) return 0;
  const QuoteStates q = quote_states(body, n, stream);
  gpu::DeviceBuffer<std::uint64_t> last(q.segments + 1);
  segment_line_breaks<<<blocks_for(q.segments), kBlock, 0, stream>>>(body, n, q.segments, q.state.data(), nullptr,
                                                                     nullptr, nullptr, last.data());
  TANDEM_CUDA_LAUNCH("segment_line_breaks (last)");
  gpu::run_cub("last line break", [&](void* t, std::size_t& b) {
    return cub::DeviceReduce::Max(t, b, last.data(), last.data() + q.segments, q.segments, stream);
  });
  return gpu::read_value(last.data() + q.segments, stream);
}

Table download(const DeviceCsv& csv) {
  Table t;
  const std::size_t rows = csv.rows;
  for (const auto& c : csv.columns) {
    Column col;
    col.name = c.name;
    col.type = c.type;
    col.length = rows;
    if (c.type == ColumnType::str) {
      std::vector<std::uint64_t> offsets(rows + 1);
      TANDEM_CUDA(cudaMemcpy(offsets.data(), c.offsets.data(), offsets.size() * 8, cudaMemcpyDeviceToHost));
      std::vector<char> bytes(offsets.back());
      if (!bytes.empty()) TANDEM_CUDA(cudaMemcpy(bytes.data(), c.values.data(), bytes.size(), cudaMemcpyDeviceToHost));
      col.values = Buffer::take(std::move(bytes));
      col.offsets = Buffer::take(std::move(offsets));
    } else {
      std::vector<std::byte> values(rows * value_width(c.type));
      if (!values.empty())
        TANDEM_CUDA(cudaMemcpy(values.data(), c.values.data(), values.size(), cudaMemcpyDeviceToHost));
      col.values = Buffer::take(std::move(values));
    }
    if (c.missing) {
      std::vector<std::uint32_t> words((rows + 31) / 32);
      TANDEM_CUDA(cudaMemcpy(words.data(), c.validity.data(), words.size() * 4, cudaMemcpyDeviceToHost));
      std::vector<std::uint8_t> bits((rows + 7) / 8);
      std::memcpy(bits.data(), words.data(), bits.size());  // little-endian words: Arrow's byte order
      col.validity = Buffer::take(std::move(bits));
    }
    t.add(std::move(col));
  }
  return t;
}

}  // namespace tandem::scan
