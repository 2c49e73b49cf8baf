// SPDX-License-Identifier: Apache-2.0
// OSSPS with its updates on starproj's devices when the objective function is one using Starproj.

#include "stir_starproj/OSSPSReconstructionStarproj.h"

#include "stir/IO/read_from_file.h"
#include "stir/Succeeded.h"
#include "stir/thresholding.h"

#include <algorithm>

START_NAMESPACE_STIR

OSSPSReconstructionStarproj::OSSPSReconstructionStarproj(const std::string& parameter_filename)
    : StarprojIterativeOnDevices<OSSPSReconstruction<TargetT>>(parameter_filename)
{}

Succeeded
OSSPSReconstructionStarproj::set_up(shared_ptr<TargetT> const& target_image_ptr)
{
  if (StarprojIterativeOnDevices<OSSPSReconstruction<TargetT>>::set_up(target_image_ptr) != Succeeded::yes)
    return Succeeded::no;
  _denominator.reset();
  if (!starproj_objective() || !this->objective_function_sptr->prior_is_zero())
    return Succeeded::yes;
  // as OSSPSReconstruction's set_up and its first update make theirs
  const std::string& source = this->precomputed_denominator_filename;
  if (source.empty())
    {
      _denominator.reset(target_image_ptr->get_empty_copy());
      shared_ptr<TargetT> ones(target_image_ptr->get_empty_copy());
      std::fill(ones->begin_all(), ones->end_all(), 1.F);
      // the objective function's approximate Hessian is negative semi-definite: the denominator is its negative
      this->objective_function_sptr->add_multiplication_with_approximate_Hessian_without_penalty(*_denominator, *ones);
      std::for_each(_denominator->begin_all(), _denominator->end_all(), [](float& a) { a = -a; });
    }
  else if (source == "1")
    {
      _denominator.reset(target_image_ptr->get_empty_copy());
      std::fill(_denominator->begin_all(), _denominator->end_all(), 1.F);
    }
  else
    {
      _denominator = read_from_file<TargetT>(source);
      std::string explanation;
      if (!_denominator->has_same_characteristics(*target_image_ptr, explanation))
        {
          // STIR's update would stop at it: leave it the host
          _denominator.reset();
          return Succeeded::yes;
        }
    }
  threshold_min_to_small_positive_value(_denominator->begin_all(), _denominator->end_all(), 10.E-6F);
  return Succeeded::yes;
}

void
OSSPSReconstructionStarproj::update_estimate(TargetT& current_image_estimate)
{
  StarprojObjectiveOnDevices* f = starproj_objective();
  if (!f || !_denominator || !this->objective_function_sptr->prior_is_zero() || this->write_update_image)
    {
      update_on_host(current_image_estimate);
      return;
    }
  if (this->get_subiteration_num() == this->get_start_subiteration_num())
    {
      // the voxels that cannot be estimated start at 0, as in STIR's update (the host holds the estimate here)
      f->estimate_to_host(current_image_estimate);
      this->objective_function_sptr->fill_nonidentifiable_target_parameters(current_image_estimate, 0);
    }
  // STIR's relaxation, ~1 / (1 + gamma n) with n the iteration (the integer quotient, as STIR computes it)
  const float relaxation
      = this->relaxation_parameter / (1 + this->relaxation_gamma * (this->subiteration_num / this->num_subsets));
  f->additive_update_on_devices(current_image_estimate,
                                this->get_subset_num(),
                                *_denominator,
                                static_cast<float>(this->num_subsets),
                                relaxation,
                                0.F,
                                static_cast<float>(this->upper_bound));
  counted_on_devices();
}

END_NAMESPACE_STIR
