// --distributed: commands run as one rank of an MPI job (mpirun -np 4 tandem sort --distributed …).
// Paths may hold {rank} and {size}; a shared input file without them is split between the ranks
// (arrays by elements, text at white space, CSV at line breaks outside quotes).
#pragma once
#include <functional>
#include <string>

#include <CLI/CLI.hpp>

#include "tandem/core/io.hpp"
#include "tandem/table.hpp"
#include "tandem/table/csv.hpp"

#if TANDEM_HAS_MPI
#include "tandem/dist.hpp"
#endif

namespace tandem::cli {

// Adds --distributed (and --gather when `gather` is given) to a subcommand.
void add_distributed_options(CLI::App& app, bool& distributed, bool* gather = nullptr);

// UsageError when this tandem was built without MPI.
void require_mpi();

bool has_rank_placeholder(const std::string& path);

#if TANDEM_HAS_MPI
// The job's context: MPI is started on the first call and finalised when the program ends.
dist::Context& mpi_context();

// This rank's input: its own file when the path holds {rank}, else its part of a shared file;
// mapped (io::map_array), since the callers only read it (they copy what they keep).
io::MappedArray read_rank_array(const dist::Context& ctx, const std::string& path, DType dtype);
io::CharBuffer read_rank_text(const dist::Context& ctx, const std::string& path);
Table read_rank_csv(const dist::Context& ctx, const std::string& path, const CsvOptions& options);

// The path this rank writes, or "" when it writes nothing: with gather only rank 0 writes (the
// path as given); otherwise every rank writes its part, so the path must hold {rank} (UsageError).
// `can_gather`: the command has --gather (the message suggests it).
std::string rank_output(const dist::Context& ctx, const std::string& path, bool gather, bool can_gather = true);

// Every rank runs `write` (into its outputs, if it has any); once every rank has written and
// flushed without error (a full disk shows at the flush), each commits its outputs (null ones
// skipped), so no rank leaves a file when one failed. `placed`: outputs that `write` itself puts in
// place (a table folder), removed again, like committed files, when another rank fails later.
void write_then_commit(const dist::Context& ctx, const std::function<void()>& write, io::AtomicOutput* first,
                       io::AtomicOutput* second = nullptr, const std::string& placed = "");
#endif

}  // namespace tandem::cli
