# Decides whether the distributed layer (src/dist, library tandem_dist) is built: it needs MPI
# (TANDEM_HAS_MPI 0/1); NCCL joins when CUDA is built and nccl.h + libnccl are found
# (TANDEM_HAS_NCCL 0/1).
set(TANDEM_MPI AUTO CACHE STRING "Build the distributed layer on MPI: AUTO (when MPI is found), ON or OFF")
set_property(CACHE TANDEM_MPI PROPERTY STRINGS AUTO ON OFF)
set(TANDEM_HAS_MPI 0)
set(TANDEM_HAS_NCCL 0)
# The C API through the C++ compiler; the deprecated C++ bindings are not needed.
set(MPI_CXX_SKIP_MPICXX ON CACHE BOOL "")
if(NOT TANDEM_MPI STREQUAL "OFF")
  if(TANDEM_MPI STREQUAL "ON")
    find_package(MPI REQUIRED COMPONENTS CXX)
  else()
    find_package(MPI QUIET COMPONENTS CXX)
  endif()
  if(MPI_CXX_FOUND)
    set(TANDEM_HAS_MPI 1)
  endif()
endif()
if(TANDEM_HAS_MPI AND TANDEM_HAS_CUDA)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/include)
  find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/lib/x86_64-linux-gnu)
  if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    set(TANDEM_HAS_NCCL 1)
  endif()
endif()
message(STATUS "tandem: MPI ${TANDEM_HAS_MPI} (TANDEM_MPI=${TANDEM_MPI}), NCCL ${TANDEM_HAS_NCCL}")

# OpenMPI refuses to start as root unless told; CI and containers run as root.
set(TANDEM_MPIEXEC_ENV "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_rmaps_base_oversubscribe=1")
