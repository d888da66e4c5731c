// xreduce: one interface for reductions on CUDA, OpenCL and OpenMP.
#pragma once

#include "xreduce/buffer.hpp"
#include "xreduce/error.hpp"
#include "xreduce/io.hpp"
#include "xreduce/reducer.hpp"
#include "xreduce/registry.hpp"
#include "xreduce/result.hpp"
#include "xreduce/segments.hpp"
#include "xreduce/semantics.hpp"
#include "xreduce/source.hpp"
#include "xreduce/types.hpp"
