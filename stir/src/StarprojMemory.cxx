// SPDX-License-Identifier: Apache-2.0
// The memory a run holds: the resident set from /proc, StarPU's accounts of each GPU (StarprojMemory.h).

#include "stir_starproj/StarprojMemory.h"

#include <starproj.h>

#include <cstdio>
#include <unistd.h>

START_NAMESPACE_STIR

int64_t
starproj_resident_set_bytes()
{
  // statm's second field: resident pages (getrusage gives only the peak, which cannot show memory given back)
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f)
    return -1;
  long long size = 0, resident = 0;
  const int fields = std::fscanf(f, "%lld %lld", &size, &resident);
  std::fclose(f);
  const long page = sysconf(_SC_PAGESIZE);
  if (fields != 2 || page <= 0)
    return -1;
  return static_cast<int64_t>(resident) * page;
}

std::string
starproj_memory_report()
{
  const double mib = 1024.0 * 1024.0;
  char buf[160];
  const int64_t rss = starproj_resident_set_bytes();
  if (rss >= 0)
    std::snprintf(buf, sizeof buf, "host resident set %.2f MiB", rss / mib);
  else
    std::snprintf(buf, sizeof buf, "host resident set unknown");
  std::string line = buf;
  const int gpus = sproj_num_gpus();
  if (gpus == 0)
    return line + "; no GPU";
  for (int g = 0; g < gpus; ++g)
    {
      int64_t used = 0, total = 0;
      if (sproj_gpu_memory(g, &used, &total) != SPROJ_OK)
        std::snprintf(buf, sizeof buf, "; GPU %d: unknown (%s)", g, sproj_last_error());
      else if (total < 0)
        std::snprintf(buf, sizeof buf, "; GPU %d: %.2f MiB used (StarPU)", g, used / mib);
      else
        std::snprintf(buf, sizeof buf, "; GPU %d: %.2f MiB used of %.2f MiB (StarPU)", g, used / mib, total / mib);
      line += buf;
    }
  return line;
}

END_NAMESPACE_STIR
