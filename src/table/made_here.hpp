// The mark of tables the library builds from string columns it wrote itself or copied from
// checked ones (tandem/table.hpp): their offsets' order is not checked again, a pass over every
// row that a CSV group-by otherwise repeats at each step from chunk to result.
#pragma once
#include "tandem/table.hpp"

namespace tandem::detail {

struct MadeHere {};
inline constexpr MadeHere kMadeHere{};

}  // namespace tandem::detail
