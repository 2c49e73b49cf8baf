// SPDX-License-Identifier: Apache-2.0
// Host memory GPUs copy from directly: pinned buffers and pinned ranges of a caller's arrays (StarprojHostMemory.h).

#include "stir_starproj/StarprojHostMemory.h"

#include "stir_starproj/StarprojRuntime.h"

#include "stir/warning.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>

#include <unistd.h>

START_NAMESPACE_STIR

StarprojHostBuffer::StarprojHostBuffer(int64_t num_floats)
    : _bytes(static_cast<std::size_t>(num_floats > 0 ? num_floats : 1) * sizeof(float))
{
  void* p = nullptr;
  starproj_check(sproj_malloc_pinned(&p, _bytes), "sproj_malloc_pinned");
  _data = static_cast<float*>(p);
  std::fill(_data, _data + _bytes / sizeof(float), 0.F);
}

StarprojHostBuffer::~StarprojHostBuffer()
{
  if (_data && sproj_free_pinned(_data, _bytes) != SPROJ_OK)
    warning(std::string("Starproj: sproj_free_pinned failed: ") + sproj_last_error());
}

StarprojPinnedRange::StarprojPinnedRange(void* ptr, std::size_t bytes, std::size_t max_bytes)
{
  // pinning is an optimisation: an array that could not be pinned is used as it is
  if (ptr && bytes > 0 && bytes <= max_bytes && sproj_pin(ptr, bytes) == SPROJ_OK)
    {
      _ptr = ptr;
      _bytes = bytes;
    }
}

StarprojPinnedRange::~StarprojPinnedRange()
{
  if (_ptr && sproj_unpin(_ptr, _bytes) != SPROJ_OK)
    warning(std::string("Starproj: sproj_unpin failed: ") + sproj_last_error());
}

void
starproj_use_huge_pages(char** argv)
{
  const char* tunables_now = std::getenv("GLIBC_TUNABLES");
  const bool had_tunables = tunables_now != nullptr;
  const std::string tunables = had_tunables ? tunables_now : "";
  const char* wanted = std::getenv("STARPROJ_STIR_HUGE_PAGES");
  if (tunables.find("glibc.malloc.hugetlb=") != std::string::npos || (wanted && std::string(wanted) == "0") || !argv
      || !argv[0])
    return;
  // the mode in use is the one in brackets: "always [madvise] never"
  std::ifstream mode_file("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string modes;
  std::getline(mode_file, modes);
  if (modes.find("[madvise]") == std::string::npos)
    return;
  const std::string value = tunables.empty() ? "glibc.malloc.hugetlb=1" : tunables + ":glibc.malloc.hugetlb=1";
  if (setenv("GLIBC_TUNABLES", value.c_str(), 1) != 0)
    return;
  execv("/proc/self/exe", argv);
  // not run again: on as it is, with the environment it had (programs it starts then inherit no tunable it lacks)
  if (had_tunables)
    setenv("GLIBC_TUNABLES", tunables.c_str(), 1);
  else
    unsetenv("GLIBC_TUNABLES");
}

END_NAMESPACE_STIR
