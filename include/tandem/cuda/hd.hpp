// TANDEM_HD marks functions that run on the host and, under nvcc, on the device too. Such
// functions live in headers, so the macro includes `inline`.
#pragma once
#if defined(__CUDACC__)
#define TANDEM_HD __host__ __device__ inline
#else
#define TANDEM_HD inline
#endif
