// SPDX-License-Identifier: Apache-2.0
// The memory a run holds, for the reports of long runs: the process's resident set and what StarPU holds on each GPU.
#ifndef STIR_STARPROJ_STARPROJMEMORY_H
#define STIR_STARPROJ_STARPROJMEMORY_H

#include "stir/common.h"

#include <cstdint>
#include <string>

START_NAMESPACE_STIR

//! the process's resident set in bytes (/proc/self/statm), -1 where the system does not say
int64_t starproj_resident_set_bytes();

//! "host resident set 123.45 MiB; GPU 0: 1234.56 MiB used of 143000.00 MiB (StarPU)" (or "no GPU"): what starproj
//! holds now, for the line reported at the end of each iteration with verbosity 1
std::string starproj_memory_report();

END_NAMESPACE_STIR

#endif
