#include "file_sort_plan.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "tandem/core/error.hpp"
#include "tandem/core/format.hpp"

namespace tandem::detail {
namespace {

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return a / b + (a % b != 0); }

FileSortPlan sized(std::uint64_t elements, std::size_t element_bytes, std::size_t memory_limit) {
  FileSortPlan p;
  p.elements = elements;
  const std::uint64_t piece = std::max<std::uint64_t>(1, memory_limit / (2 * element_bytes));
  p.runs = std::size_t(std::max<std::uint64_t>(1, ceil_div(elements, piece)));
  p.piece_elements = std::size_t(ceil_div(elements, p.runs));  // equal pieces, none above `piece`
  if (p.runs > 1) p.window_elements = memory_limit / (2 * p.runs * element_bytes);
  return p;
}

}  // namespace

FileSortPlan plan_file_sort(std::uint64_t elements, std::size_t element_bytes, std::size_t memory_limit) {
  if (element_bytes == 0) throw UsageError("plan_file_sort: elements of 0 bytes");
  const FileSortPlan p = sized(elements, element_bytes, memory_limit);
  if (p.runs == 1 || p.window_elements >= kMinRunWindow) return p;
  // The least limit: windows of kMinRunWindow for runs of limit / (2 * element_bytes) elements,
  // L^2 >= 4 * kMinRunWindow * element_bytes^2 * elements; rounded up until the plan agrees.
  auto least =
      std::size_t(std::ceil(2.0 * double(element_bytes) * std::sqrt(double(kMinRunWindow) * double(elements))));
  for (FileSortPlan q = sized(elements, element_bytes, least); q.runs > 1 && q.window_elements < kMinRunWindow;
       q = sized(elements, element_bytes, least))
    least += least / 64 + 1;
  throw UsageError(fmt::format(
      "memory_limit: {} is too little to sort {} elements of {} bytes by runs ({} runs, "
      "windows of {} elements in the merge); at least {} ({} bytes)",
      human_bytes(memory_limit), elements, element_bytes, p.runs, p.window_elements, human_bytes(least), least));
}

}  // namespace tandem::detail
