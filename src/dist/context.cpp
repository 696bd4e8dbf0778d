// The distributed context: a private duplicate of the caller's communicator, the host layout,
// the optional NCCL communicator, and the agreement on errors that keeps one rank's failure from
// leaving the others waiting.
#include <algorithm>

#include <fmt/format.h>

#include "dist/context_impl.hpp"
#include "dist/mpi_check.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/parallel.hpp"

#if TANDEM_HAS_CUDA
#include <cuda_runtime_api.h>
#endif

namespace tandem::dist {
namespace {

void setup_nccl(Context::Impl& s, const ContextOptions& options) {
#if TANDEM_HAS_CUDA && TANDEM_HAS_NCCL
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess) {
    (void)cudaGetLastError();
    devices = 0;
  }
  // Every rank must have a GPU of its own: NCCL refuses two ranks on one device.
  int own = devices >= s.local_size ? 1 : 0;
  int all_own = 0;
  check_mpi(MPI_Allreduce(&own, &all_own, 1, MPI_INT, MPI_MIN, s.comm), "MPI_Allreduce");
  if (devices > 0) s.gpu = all_own ? s.local_rank : -1;
  if (!options.use_nccl) {
    s.nccl_status = "off (not asked for)";
    return;
  }
  if (!all_own) {
    s.nccl_status = "no (not every rank has a GPU of its own)";
    return;
  }
  if (cudaSetDevice(s.gpu) != cudaSuccess) throw CudaError(fmt::format("cudaSetDevice({}) failed", s.gpu));
  ncclUniqueId id{};
  if (s.rank == 0 && ncclGetUniqueId(&id) != ncclSuccess) throw Error("ncclGetUniqueId failed");
  check_mpi(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, s.comm), "MPI_Bcast");
  const ncclResult_t r = ncclCommInitRank(&s.nccl, s.size, id, s.rank);
  if (r != ncclSuccess) throw Error(fmt::format("ncclCommInitRank failed: {}", ncclGetErrorString(r)));
  s.nccl_status = fmt::format("yes (NCCL {}.{}.{})", NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH);
#else
  (void)options;
  s.nccl_status = "no (built without NCCL)";
#endif
}

enum ErrorKind : int { usage = 1, input, no_device, out_of_memory, cuda, error, other };

std::pair<int, std::string> classify(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const UsageError& x) {
    return {usage, x.what()};
  } catch (const InputError& x) {
    return {input, x.what()};
  } catch (const NoDeviceError& x) {
    return {no_device, x.what()};
  } catch (const OutOfMemoryError& x) {
    return {out_of_memory, x.what()};
  } catch (const CudaError& x) {
    return {cuda, x.what()};
  } catch (const Error& x) {
    return {error, x.what()};
  } catch (const std::exception& x) {
    return {other, x.what()};
  } catch (...) {
    return {other, "unknown error"};
  }
}

[[noreturn]] void throw_kind(int kind, const std::string& message) {
  switch (kind) {
    case usage: throw UsageError(message);
    case input: throw InputError(message);
    case no_device: throw NoDeviceError(message);
    case out_of_memory: throw OutOfMemoryError(message);
    case cuda: throw CudaError(message);
    default: throw Error(message);
  }
}

}  // namespace

Context::Context(MPI_Comm comm, const ContextOptions& options) : impl_(std::make_unique<Impl>()) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) throw UsageError("dist::Context: MPI is not initialised (call MPI_Init first)");
  Impl& s = *impl_;
  check_mpi(MPI_Comm_dup(comm, &s.comm), "MPI_Comm_dup");
  // Errors come back as codes (check_mpi turns them into exceptions), not as an abort.
  MPI_Comm_set_errhandler(s.comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(s.comm, &s.rank);
  MPI_Comm_size(s.comm, &s.size);
  check_mpi(MPI_Comm_split_type(s.comm, MPI_COMM_TYPE_SHARED, s.rank, MPI_INFO_NULL, &s.host_comm),
            "MPI_Comm_split_type");
  MPI_Comm_rank(s.host_comm, &s.local_rank);
  MPI_Comm_size(s.host_comm, &s.local_size);
  int leader = s.local_rank == 0 ? 1 : 0;
  check_mpi(MPI_Allreduce(&leader, &s.hosts, 1, MPI_INT, MPI_SUM, s.comm), "MPI_Allreduce");
  s.threads = options.threads > 0 ? options.threads : std::max(1, default_threads() / s.local_size);
  s.receive_buffers = ReceiveBuffers(options.keep_receive_bytes);
  run_agreed([&] { setup_nccl(s, options); });
}

Context::~Context() {
  if (!impl_) return;
#if TANDEM_HAS_NCCL
  if (impl_->nccl) ncclCommDestroy(impl_->nccl);
#endif
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (impl_->host_comm != MPI_COMM_NULL) MPI_Comm_free(&impl_->host_comm);
  if (impl_->comm != MPI_COMM_NULL) MPI_Comm_free(&impl_->comm);
}

int Context::rank() const noexcept { return impl_->rank; }
int Context::size() const noexcept { return impl_->size; }
MPI_Comm Context::comm() const noexcept { return impl_->comm; }
int Context::local_rank() const noexcept { return impl_->local_rank; }
int Context::local_size() const noexcept { return impl_->local_size; }
int Context::threads() const noexcept { return impl_->threads; }
void Context::release_buffers() const noexcept { impl_->receive_buffers.release(); }
std::uint64_t Context::kept_buffer_bytes() const noexcept { return impl_->receive_buffers.kept_bytes(); }
int Context::gpu() const noexcept { return impl_->gpu; }
bool Context::has_nccl() const noexcept {
#if TANDEM_HAS_NCCL
  return impl_->nccl != nullptr;
#else
  return false;
#endif
}

std::string Context::describe() const {
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(version, &len);
  std::string v(version, std::size_t(len));
  if (auto nl = v.find_first_of(",\n"); nl != std::string::npos) v.resize(nl);
  return fmt::format("{} rank{} on {} host{}, MPI ({}), NCCL: {}", impl_->size, impl_->size == 1 ? "" : "s",
                     impl_->hosts, impl_->hosts == 1 ? "" : "s", v, impl_->nccl_status);
}

void Context::agree(std::exception_ptr local_error) const {
  const Impl& s = *impl_;
  int mine = local_error ? s.rank : s.size;
  int first = s.size;
  check_mpi(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, s.comm), "MPI_Allreduce");
  if (first == s.size) return;
  int kind = 0;
  std::string message;
  if (s.rank == first) std::tie(kind, message) = classify(local_error);
  long long length = static_cast<long long>(message.size());
  int head[2] = {kind, static_cast<int>(std::min<long long>(length, 1 << 20))};
  check_mpi(MPI_Bcast(head, 2, MPI_INT, first, s.comm), "MPI_Bcast");
  message.resize(std::size_t(head[1]));
  check_mpi(MPI_Bcast(message.data(), head[1], MPI_CHAR, first, s.comm), "MPI_Bcast");
  throw_kind(head[0], fmt::format("rank {}: {}", first, message));
}

std::string expand_rank_path(std::string path, int rank, int size) {
  auto replace = [&](std::string_view what, int value) {
    for (auto at = path.find(what); at != std::string::npos; at = path.find(what, at)) {
      const auto text = std::to_string(value);
      path.replace(at, what.size(), text);
      at += text.size();
    }
  };
  replace("{rank}", rank);
  replace("{size}", size);
  return path;
}

}  // namespace tandem::dist
