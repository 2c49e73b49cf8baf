// SPDX-License-Identifier: Apache-2.0
// The starproj runtime (StarPU) as STIR's classes use it: started once per process by the first object that needs it,
// starproj's errors turned into STIR's, and the cores host loops may use beside it.
#ifndef STIR_STARPROJ_STARPROJRUNTIME_H
#define STIR_STARPROJ_STARPROJRUNTIME_H

#include "stir_starproj/StarprojSettings.h"

#include <starproj.h>

#include <memory>
#include <string>

START_NAMESPACE_STIR

//! Turns a starproj status into a STIR error (stir::error) carrying starproj's message.
void starproj_check(int status, const char* what);
//! The message of an exception STIR's error() threw, as one line for a report of ours: without the newlines and the
//! "ERROR:" that error() puts around it (error() wrote that form already)
std::string starproj_error_text(const char* what);

//! starproj's runtime: started by the first projector that needs it, stopped when the last one is gone.
class StarprojRuntime
{
public:
  static std::shared_ptr<StarprojRuntime> acquire(const StarprojSettings& settings);
  ~StarprojRuntime();
  //! sets the kind of worker projection tasks go to (call outside parallel regions)
  void use_devices(const std::string& devices, int verbosity);

  StarprojRuntime(const StarprojRuntime&) = delete;
  StarprojRuntime& operator=(const StarprojRuntime&) = delete;

private:
  StarprojRuntime() = default;
  bool _started_here = false;
};

//! OpenMP threads for host loops beside a running starproj: the cores StarPU's GPU workers do not poll on (0: OpenMP's
//! default, when StarPU drives no GPU).
int starproj_host_threads();
//! threads for an OpenMP loop given a count that may be 0 (OpenMP's default: its maximum)
int starproj_threads_or_default(int threads);

END_NAMESPACE_STIR

#endif
