// SPDX-License-Identifier: Apache-2.0
/*
  STIR's Poisson log-likelihood of projection data, computed by starproj on resident data: the objective function
  "PoissonLogLikelihoodWithLinearModelForMeanAndProjData using Starproj". It reads the same keys as STIR's
  PoissonLogLikelihoodWithLinearModelForMeanAndProjData (input file, additive sinogram, Bin Normalisation, maximum
  segment, zero end planes, time frame) and STIR's settings of the starproj runtime (devices, scheduler, ...), and at
  set_up registers the LORs, the measured data, the normalisation evaluated once per bin and the additive term with
  starproj, where they stay (on the GPUs) for the objective's life. Subset sensitivities, gradients (with and without
  the sensitivity), objective values and both Hessian products are then starproj task graphs: a call moves the image
  it is given and the image it returns, nothing else.
*/
#ifndef STIR_STARPROJ_POISSONLOGLIKELIHOODSTARPROJ_H
#define STIR_STARPROJ_POISSONLOGLIKELIHOODSTARPROJ_H

#include "stir/DiscretisedDensity.h"
#include "stir/recon_buildblock/PoissonLogLikelihoodWithLinearModelForMeanAndProjData.h"
#include "stir_starproj/StarprojObjectiveFunction.h"

START_NAMESPACE_STIR

class PoissonLogLikelihoodWithLinearModelForMeanAndProjDataStarproj
    : public StarprojRegisteredObjectiveFunction<
          PoissonLogLikelihoodWithLinearModelForMeanAndProjDataStarproj,
          PoissonLogLikelihoodWithLinearModelForMeanAndProjData<DiscretisedDensity<3, float>>>
{
public:
  static const char* const registered_name;

  PoissonLogLikelihoodWithLinearModelForMeanAndProjDataStarproj();

protected:
  Succeeded set_up_before_sensitivity(shared_ptr<const TargetT> const& target_sptr) override;
  Succeeded actual_add_multiplication_with_approximate_sub_Hessian_without_penalty(TargetT& output,
                                                                                   const TargetT& input,
                                                                                   const int subset_num) const override;
  int num_views_in_subsets() const override;

private:
  struct Inputs; // what set_up registered with starproj besides the LORs
  //! the data and the additive sinogram can be read to their ends (StarprojInputChecks.h)
  void check_inputs_readable() const;
};

END_NAMESPACE_STIR

#endif
