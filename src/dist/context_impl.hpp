// What a Context holds; the operations in src/dist reach it through Context::impl().
#pragma once
#include <string>

#include <mpi.h>

#include "dist/receive_buffers.hpp"
#include "tandem/dist.hpp"

#if TANDEM_HAS_NCCL
#include <nccl.h>
#endif

namespace tandem::dist {

struct Context::Impl {
  MPI_Comm comm{MPI_COMM_NULL};       // the library's duplicate of the caller's communicator
  MPI_Comm host_comm{MPI_COMM_NULL};  // the ranks of this host
  int rank{0}, size{1}, local_rank{0}, local_size{1}, hosts{1};
  int gpu{-1};
  int threads{1};
  std::string nccl_status;  // why NCCL is or is not used
  // Kept between operations (a cache: operations on a const Context take and give back).
  mutable ReceiveBuffers receive_buffers;
#if TANDEM_HAS_NCCL
  ncclComm_t nccl{nullptr};
#endif
};

}  // namespace tandem::dist
