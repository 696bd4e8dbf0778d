// Tables with the same columns joined end to end (chunks of a scan into one table).
#pragma once
#include <vector>

#include "tandem/table.hpp"

namespace tandem::scan {

Table concatenate(const std::vector<Table>& parts, int threads);

}  // namespace tandem::scan
