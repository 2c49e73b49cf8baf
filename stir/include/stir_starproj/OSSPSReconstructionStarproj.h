// SPDX-License-Identifier: Apache-2.0
/*
  STIR's OSSPS whose updates, with an objective function using Starproj and no prior, are done where starproj keeps
  the data: the subset gradient, its scaling by the number of subsets, the division by the precomputed denominator,
  the relaxation, the addition and the bounds [0, upper bound] are one task graph per sub-iteration on the devices,
  and the estimate comes to the host only when STIR reads it (StarprojIterativeOnDevices). Otherwise (a prior, update
  images written, another objective function) it is STIR's OSSPS as it is.
*/
#ifndef STIR_STARPROJ_OSSPSRECONSTRUCTIONSTARPROJ_H
#define STIR_STARPROJ_OSSPSRECONSTRUCTIONSTARPROJ_H

#include "stir/DiscretisedDensity.h"
#include "stir/OSSPS/OSSPSReconstruction.h"
#include "stir_starproj/StarprojIterativeOnDevices.h"

#include <string>

START_NAMESPACE_STIR

class OSSPSReconstructionStarproj : public StarprojIterativeOnDevices<OSSPSReconstruction<DiscretisedDensity<3, float>>>
{
public:
  explicit OSSPSReconstructionStarproj(const std::string& parameter_filename = "");
  Succeeded set_up(shared_ptr<TargetT> const& target_image_ptr) override;
  void update_estimate(TargetT& current_image_estimate) override;

private:
  //! the denominator STIR's update divides by without a prior: its precomputed one (from the approximate Hessian,
  //! "1" or a file, as precomputed_denominator_filename says), made strictly positive as STIR makes it. STIR keeps its
  //! own private, so the set-up makes it again from the same source.
  shared_ptr<TargetT> _denominator;
};

END_NAMESPACE_STIR

#endif
