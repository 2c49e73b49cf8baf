// SPDX-License-Identifier: Apache-2.0
// What users set in .par files for the "Starproj" projectors, the pair and the objective functions using Starproj.
#ifndef STIR_STARPROJ_STARPROJSETTINGS_H
#define STIR_STARPROJ_STARPROJSETTINGS_H

#include "stir/common.h"

#include <string>

START_NAMESPACE_STIR

class KeyParser;

//! The same keys in every section that starts the starproj runtime (projectors, pair, objective functions).
struct StarprojSettings
{
  std::string devices = "gpu"; //!< gpu (falls back to CPU cores when StarPU drives no GPU), cpu or any
  std::string scheduler;       //!< StarPU scheduler; empty: starproj's choice
  int verbosity = 0;           //!< 0 quiet, 1 workers and scheduler, 2 also per-set_up information and times
  int num_cpu_workers = -1;    //!< -1: starproj's default
  int num_gpus = -1;           //!< -1: every GPU StarPU finds
  bool restrict_to_cylindrical_FOV = true;

  void add_keys(KeyParser& parser);
  //! false (with a warning) when a value is invalid
  bool check() const;
};

END_NAMESPACE_STIR

#endif
