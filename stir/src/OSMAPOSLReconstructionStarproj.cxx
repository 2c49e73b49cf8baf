// SPDX-License-Identifier: Apache-2.0
// OSMAPOSL with its updates on starproj's devices when the objective function is one using Starproj.

#include "stir_starproj/OSMAPOSLReconstructionStarproj.h"

#include "stir/info.h"
#include "stir/is_null_ptr.h"
#include "stir_starproj/StarprojObjective.h"

#include <limits>

START_NAMESPACE_STIR

OSMAPOSLReconstructionStarproj::OSMAPOSLReconstructionStarproj(const std::string& parameter_filename)
    : OSMAPOSLReconstruction<TargetT>(parameter_filename)
{}

StarprojObjectiveOnDevices*
OSMAPOSLReconstructionStarproj::starproj_objective() const
{
  return dynamic_cast<StarprojObjectiveOnDevices*>(this->objective_function_sptr.get());
}

bool
OSMAPOSLReconstructionStarproj::host_needs_estimate() const
{
  const int n = this->subiteration_num;
  if (n == this->num_subiterations)
    return true; // the result, the post-filter, the last save
  if (this->report_objective_function_values_interval > 0 && n % this->report_objective_function_values_interval == 0)
    return true;
  if (this->inter_iteration_filter_interval > 0 && !is_null_ptr(this->inter_iteration_filter_ptr)
      && n % this->inter_iteration_filter_interval == 0)
    return true;
  return !this->_disable_output && n % this->save_interval == 0;
}

void
OSMAPOSLReconstructionStarproj::update_estimate(TargetT& current_image_estimate)
{
  StarprojObjectiveOnDevices* f = starproj_objective();
  const bool inter_update_filter = this->inter_update_filter_interval > 0 && !is_null_ptr(this->inter_update_filter_ptr)
                                   && this->subiteration_num % this->inter_update_filter_interval == 0;
  if (!f || !this->objective_function_sptr->prior_is_zero() || inter_update_filter || this->write_update_image)
    {
      if (f)
        f->estimate_to_host(current_image_estimate);
      ++_on_host;
      OSMAPOSLReconstruction<TargetT>::update_estimate(current_image_estimate);
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
  ++_on_devices;
}

void
OSMAPOSLReconstructionStarproj::end_of_iteration_processing(TargetT& current_estimate)
{
  StarprojObjectiveOnDevices* f = starproj_objective();
  if (f && f->estimate_on_devices())
    {
      if (!host_needs_estimate())
        {
          info(this->method_info() + " subiteration #" + std::to_string(this->subiteration_num)
                   + " completed (the estimate stays on starproj's devices)",
               2);
          return;
        }
      f->estimate_to_host(current_estimate);
    }
  OSMAPOSLReconstruction<TargetT>::end_of_iteration_processing(current_estimate);
}

END_NAMESPACE_STIR
