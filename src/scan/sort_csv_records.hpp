// A CSV file sorted in memory with its records kept as they were written: only the key columns
// (and the columns a schema names, whose values it checks) are parsed, by the streaming scan;
// every record's bytes are kept and written out in key order, the header first. Nothing of a
// value changes on the way (no reformatting of numbers, no requoting), and the other columns
// cost a copy of their bytes, not a parse, a gather and a print.
#pragma once
#include <iosfwd>
#include <string>
#include <string_view>

#include "tandem/table_sort.hpp"

namespace tandem::scan {

// InputError naming the file, line and column of a malformed record; UsageError naming a key
// the header lacks. The input (a file, or standard input: "-") is read whole, on every core for
// a file, and scanned in place, so a key whose type widens after the sample is scanned again
// from memory; a compressed file streams through its decompressor.
CsvSortResult sort_csv_records(const std::string& path, const SortSpec& spec, std::ostream& out,
                               const CsvSortOptions& options);

// The records of `body` (whole records of a CSV file's body with `fields` fields each, read with
// `delimiter`) as a string column named `name`, one row per record (blank lines belong to none),
// each with its line end; a last record without one gets `line_end`. For sorted runs that write
// their records as read.
Column record_column(std::string name, std::string_view body, char delimiter, std::size_t fields,
                     std::string_view line_end);

// The header as read, with a line feed after it when it has no line end (a file of a header only).
void write_header(std::ostream& out, const std::string& header);

// The line end a last record without one is given: the header's ("\r\n" or "\n").
std::string line_end_of(std::string_view header);

}  // namespace tandem::scan
