// Tables between Python and tandem::Table. A column crosses as a tuple:
//   ("numbers", name, values, missing)        values: 1-D numpy array of a key type, used in place;
//                                             missing: numpy bool array (True: missing) or None
//   ("strings", name, items)                  items: a sequence (list, object array) of str or bytes;
//                                             None, NaN and pandas.NA are missing
//   ("categories", name, categories, codes)   categories: a sequence of str; codes: numpy integers
//                                             indexing it, -1 missing (pandas' Categorical)
//   ("column", name, _Table) / ("arrow", name, capsule)  a _Table's column, a one-column Arrow
//                                             stream (arrow.hpp)
// and comes back as (name, values, missing) with values a numpy array (numbers, no copy) or an
// object array of str (missing rows None), missing a bool array or None when nothing is missing.
#pragma once
#include "common.hpp"
#include "tandem/table.hpp"

namespace tandem::python {

Table table_from_python(const py::sequence& columns);
py::list table_to_python(const Table& t);

}  // namespace tandem::python
