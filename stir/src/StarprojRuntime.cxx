// SPDX-License-Identifier: Apache-2.0
// The starproj runtime as STIR's classes use it (StarprojRuntime.h).

#include "stir_starproj/StarprojRuntime.h"

#include "stir/error.h"
#include "stir/info.h"
#include "stir/warning.h"

#ifdef _OPENMP
#  include <omp.h>
#endif

#include <algorithm>
#include <mutex>
#include <string>
#include <thread>

START_NAMESPACE_STIR

void
starproj_check(int status, const char* what)
{
  if (status == SPROJ_OK)
    return;
  // sproj_last_error() is per thread: read it before anything else can call starproj
  const std::string message = sproj_last_error();
  error(std::string("Starproj: ") + what + " failed: " + (message.empty() ? sproj_strerror(status) : message) + " ("
        + sproj_strerror(status) + ")");
}

std::string
starproj_error_text(const char* what)
{
  std::string s(what ? what : "");
  const char* space = " \t\r\n";
  std::string::size_type first = s.find_first_not_of(space);
  if (first != std::string::npos && s.compare(first, 6, "ERROR:") == 0)
    first = s.find_first_not_of(space, first + 6);
  if (first == std::string::npos)
    return std::string();
  s = s.substr(first, s.find_last_not_of(space) - first + 1);
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

std::shared_ptr<StarprojRuntime>
StarprojRuntime::acquire(const StarprojSettings& settings)
{
  static std::mutex mutex;
  static std::weak_ptr<StarprojRuntime> current;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto runtime = current.lock())
    return runtime;
  std::shared_ptr<StarprojRuntime> runtime(new StarprojRuntime);
  if (!sproj_is_initialized())
    {
      sproj_config cfg;
      sproj_config_init(&cfg);
      cfg.ncpu = settings.num_cpu_workers;
      cfg.ncuda = settings.num_gpus;
      cfg.sched = settings.scheduler.empty() ? nullptr : settings.scheduler.c_str();
      cfg.verbose = settings.verbosity > 0 ? 1 : 0;
      // Projections on GPUs only: no CPU workers at all. StarPU's idle CPU workers poll for tasks, and on the cores
      // STIR's OpenMP threads use they took half of every host loop (the image copies, STIR's own arithmetic).
      // Without a GPU, starproj starts again with its usual CPU workers.
      const bool gpus_only = settings.devices == "gpu" && settings.num_cpu_workers == -1 && settings.num_gpus != 0;
      if (gpus_only)
        cfg.ncpu = 0;
      int status = sproj_init(&cfg);
      if (gpus_only && (status != SPROJ_OK || sproj_num_gpus() == 0))
        {
          if (status == SPROJ_OK)
            starproj_check(sproj_shutdown(), "sproj_shutdown");
          cfg.ncpu = -1;
          status = sproj_init(&cfg);
        }
      starproj_check(status, "sproj_init");
      runtime->_started_here = true;
      if (settings.verbosity > 0)
        info("Starproj: " + std::to_string(sproj_num_cpu_workers()) + " CPU workers, " + std::to_string(sproj_num_gpus())
             + " GPUs, scheduler " + sproj_scheduler_name());
    }
  current = runtime;
  return runtime;
}

StarprojRuntime::~StarprojRuntime()
{
  if (_started_here)
    {
      const int status = sproj_shutdown();
      if (status != SPROJ_OK)
        warning(std::string("Starproj: sproj_shutdown failed: ") + sproj_last_error());
    }
}

void
StarprojRuntime::use_devices(const std::string& devices, int verbosity)
{
  unsigned mask = SPROJ_DEVICE_CPU;
  if (devices == "any")
    mask = sproj_num_gpus() > 0 ? SPROJ_DEVICE_ANY : SPROJ_DEVICE_CPU;
  else if (devices == "gpu")
    {
      if (sproj_num_gpus() > 0)
        mask = SPROJ_DEVICE_CUDA;
      else if (verbosity > 0)
        info("Starproj: no GPU, projecting on CPU cores");
    }
  starproj_check(sproj_set_devices(mask), "sproj_set_devices");
}

int
starproj_host_threads()
{
  // StarPU's GPU workers poll on cores of their own: host loops leave those cores to them (with all cores, the
  // copies of the mMR image took 4-7 ms on 16 cores beside 4 GPU workers, against 1.4 ms on 15)
#ifdef _OPENMP
  const int gpu_workers = sproj_num_workers() - sproj_num_cpu_workers();
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  if (gpu_workers > 0 && cores > 0)
    return std::max(1, std::min(omp_get_max_threads(), cores - gpu_workers));
#endif
  return 0;
}

int
starproj_threads_or_default(int threads)
{
#ifdef _OPENMP
  return threads > 0 ? threads : omp_get_max_threads();
#else
  return threads > 0 ? threads : 1;
#endif
}

END_NAMESPACE_STIR
