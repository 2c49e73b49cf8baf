// SPDX-License-Identifier: Apache-2.0
// OSMAPOSL with its updates on starproj's devices when the objective function is one using Starproj.

#include "stir_starproj/OSMAPOSLReconstructionStarproj.h"

#include <limits>

START_NAMESPACE_STIR

OSMAPOSLReconstructionStarproj::OSMAPOSLReconstructionStarproj(const std::string& parameter_filename)
    : StarprojIterativeOnDevices<OSMAPOSLReconstruction<TargetT>>(parameter_filename)
{}

void
OSMAPOSLReconstructionStarproj::update_estimate(TargetT& current_image_estimate)
{
  StarprojObjectiveOnDevices* f = starproj_objective();
  const bool inter_update_filter = this->inter_update_filter_interval > 0 && !is_null_ptr(this->inter_update_filter_ptr)
                                   && this->subiteration_num % this->inter_update_filter_interval == 0;
  if (!f || !this->objective_function_sptr->prior_is_zero() || inter_update_filter || this->write_update_image)
    {
      update_on_host(current_image_estimate);
      return;
    }
  const int subset_num = this->get_subset_num();
  // STIR bounds the relative change from the second sub-iteration on
  float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
  if (this->subiteration_num != 1)
    {
      lo = static_cast<float>(this->minimum_relative_change);
      hi = static_cast<float>(this->maximum_relative_change);
    }
  f->multiplicative_update_on_devices(current_image_estimate, subset_num, this->get_subset_sensitivity(subset_num), lo, hi);
  counted_on_devices();
}

END_NAMESPACE_STIR
