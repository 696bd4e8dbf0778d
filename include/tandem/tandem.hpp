// tandem in one include: every capability and the utilities they share, for C++ sources (with or
// without CUDA). Headers for CUDA sources only stay out and are included where needed:
// tandem/cuda/{runtime,buffers,format}.hpp, tandem/index/device.hpp, tandem/schedule/launch.cuh,
// tandem/mapreduce/gpu_engine.cuh. The hybrid bitonic engine's plan and CPU affinity
// (tandem/sort/bitonic_{plan,affinity}.hpp) and the machine's tuning and calibration
// (tandem/core/{tune,calibrate}.hpp) are the engines' own: included where used.
#pragma once

// The capabilities.
#include "tandem/device_table.hpp"
#include "tandem/groupby.hpp"
#include "tandem/groupby_csv.hpp"
#include "tandem/groupby_sink.hpp"
#include "tandem/index.hpp"
#include "tandem/mapreduce.hpp"
#include "tandem/schedule.hpp"
#include "tandem/schedule/controller.hpp"
#include "tandem/sort.hpp"
#include "tandem/sort/bitonic.hpp"
#include "tandem/table.hpp"
#include "tandem/table/csv.hpp"
#include "tandem/table/files.hpp"
#include "tandem/table_sort.hpp"
#include "tandem/topk.hpp"

// What they share: errors, vocabulary, reports, files, the machine, timing, transfers.
#include "tandem/core/device.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/format.hpp"
#include "tandem/core/hash.hpp"
#include "tandem/core/io.hpp"
#include "tandem/core/key_order.hpp"
#include "tandem/core/memory.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/core/report.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/core/transfer.hpp"
#include "tandem/core/types.hpp"

// CUDA helpers that also compile without CUDA.
#include "tandem/cuda/hd.hpp"
#include "tandem/cuda/launch.hpp"
#include "tandem/cuda/stream.hpp"
