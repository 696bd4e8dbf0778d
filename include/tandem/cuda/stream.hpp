// cudaStream_t for headers that CPU-only builds include too: every public header names a CUDA
// stream cudaStream_t. Without CUDA it is declared here as the runtime declares it (a pointer to
// the opaque CUstream_st), so the two declarations agree wherever both appear; CPU-only callers
// pass nullptr.
#pragma once
#if TANDEM_HAS_CUDA
#include <cuda_runtime_api.h>
#else
struct CUstream_st;
using cudaStream_t = CUstream_st*;
#endif
