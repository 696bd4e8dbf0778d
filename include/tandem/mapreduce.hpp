// tandem::mapreduce — MapReduce on the CPU and the GPU (unified shared/global memory management).
// This header includes all of its public part; each subject has a header of its own:
//   tandem/mapreduce/engine_options.hpp  the engines' options, the GPU engine's stats
//   tandem/mapreduce/jobs.hpp            what a job is; the group-by and word count jobs
//   tandem/mapreduce/words.hpp           word tokenisation, the same on the CPU and the GPU
//   tandem/mapreduce/cpu_engine.hpp      cpu_mapreduce: any job on CPU threads
//   tandem/mapreduce/wordcount.hpp       word count of a text or files
//   tandem/mapreduce/generate.hpp        Zipf keys and Zipf text
// The GPU engine (tandem/mapreduce/gpu_engine.cuh, for .cu files) runs jobs whose map/reduce are
// __host__ __device__ and whose keys are fixed-width: sampling pass, hot keys preloaded into a
// shared-memory pool, per-block global tables, final merge.
#pragma once
#include <span>  // included here before the split into tandem/mapreduce/: code may rely on it

#include "tandem/mapreduce/cpu_engine.hpp"
#include "tandem/mapreduce/engine_options.hpp"
#include "tandem/mapreduce/generate.hpp"
#include "tandem/mapreduce/jobs.hpp"
#include "tandem/mapreduce/wordcount.hpp"
#include "tandem/mapreduce/words.hpp"
