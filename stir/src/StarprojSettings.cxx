// SPDX-License-Identifier: Apache-2.0
// The .par keys of the starproj runtime and their checks (StarprojSettings.h).

#include "stir_starproj/StarprojSettings.h"

#include "stir/KeyParser.h"
#include "stir/warning.h"

START_NAMESPACE_STIR

void
StarprojSettings::add_keys(KeyParser& parser)
{
  parser.add_key("devices", &devices);
  parser.add_key("scheduler", &scheduler);
  parser.add_key("verbosity", &verbosity);
  parser.add_key("number of CPU workers", &num_cpu_workers);
  parser.add_key("number of GPUs", &num_gpus);
  parser.add_key("restrict to cylindrical FOV", &restrict_to_cylindrical_FOV);
}

bool
StarprojSettings::check() const
{
  if (devices != "gpu" && devices != "cpu" && devices != "any")
    {
      warning("Starproj: 'devices' must be gpu, cpu or any, not '" + devices + "'");
      return false;
    }
  if (num_cpu_workers < -1 || num_gpus < -1)
    {
      warning("Starproj: 'number of CPU workers' and 'number of GPUs' must be -1 (default) or >= 0");
      return false;
    }
  return true;
}

END_NAMESPACE_STIR
