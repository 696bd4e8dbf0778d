// A chunk's column as its values are read: numbers in an array of the column's width, strings
// as bytes + offsets (no string object per row), missing rows listed and turned into a validity
// bitmap at the end. Arrays grow by doubling without zero-filling.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "tandem/table.hpp"

namespace tandem::scan {

class RawArray {
 public:
  void append(const void* p, std::size_t n) {
    if (size_ + n > capacity_) grow(size_ + n);
    std::memcpy(data_.get() + size_, p, n);
    size_ += n;
  }
  template <class T>
  void push(T v) {
    if (size_ + sizeof(T) > capacity_) grow(size_ + sizeof(T));
    std::memcpy(data_.get() + size_, &v, sizeof(T));
    size_ += sizeof(T);
  }
  void reserve(std::size_t n) {
    if (n > capacity_) grow(n);
  }
  std::size_t size() const { return size_; }
  Buffer take() {
    Buffer b = Buffer::borrow(data_.get(), size_, data_);
    data_.reset();
    size_ = capacity_ = 0;
    return b;
  }

 private:
  void grow(std::size_t need) {
    const std::size_t cap = std::max({need, capacity_ * 2, std::size_t{256}});
    std::shared_ptr<std::byte> bigger = block(cap);
    if (size_) std::memcpy(bigger.get(), data_.get(), size_);
    data_ = std::move(bigger);
    capacity_ = cap;
  }
  std::shared_ptr<std::byte> data_;
  std::size_t size_{0}, capacity_{0};

 public:
  // Large blocks on transparent huge pages (a page fault per 2 MiB instead of per 4 KiB, which
  // on a virtual machine is much of the cost of filling fresh memory), and kept for the next
  // chunk when the last table using one lets it go (block_pool.cpp).
  static std::shared_ptr<std::byte> block(std::size_t bytes);
};

struct ColumnOut {
  ColumnType type{ColumnType::i64};
  std::size_t rows{0};
  RawArray values;   // numbers, or a string column's bytes
  RawArray offsets;  // strings: rows + 1 u64 offsets
  std::vector<std::size_t> missing;

  void start(ColumnType t, std::size_t expected_rows, std::size_t string_bytes) {
    type = t;
    if (t == ColumnType::str) {
      values.reserve(string_bytes);
      offsets.reserve((expected_rows + 1) * 8);
      offsets.push<std::uint64_t>(0);
    } else {
      values.reserve(expected_rows * value_width(t));
    }
  }
  void push_string(const char* b, std::size_t n) {
    values.append(b, n);
    offsets.push<std::uint64_t>(values.size());
    ++rows;
  }
  void push_missing() {
    missing.push_back(rows);
    if (type == ColumnType::str) {
      offsets.push<std::uint64_t>(values.size());
      ++rows;
    } else {
      const std::uint64_t zero = 0;
      values.append(&zero, value_width(type));
      ++rows;
    }
  }
  template <class T>
  void push_number(T v) {
    values.push(v);
    ++rows;
  }
  Column finish(const std::string& name) {
    Column c;
    c.name = name;
    c.type = type;
    c.length = rows;
    c.values = values.take();
    if (type == ColumnType::str) c.offsets = offsets.take();
    if (!missing.empty()) {
      std::vector<std::uint8_t> bits((rows + 7) / 8, 0xff);
      for (const std::size_t r : missing) bits[r >> 3] &= static_cast<std::uint8_t>(~(1u << (r & 7)));
      c.validity = Buffer::take(std::move(bits));
    }
    return c;
  }
};

}  // namespace tandem::scan
