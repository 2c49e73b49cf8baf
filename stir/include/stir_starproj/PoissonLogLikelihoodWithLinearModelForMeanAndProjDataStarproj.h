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
#include "stir/RegisteredParsingObject.h"
#include "stir/recon_buildblock/PoissonLogLikelihoodWithLinearModelForMeanAndProjData.h"
#include "stir_starproj/StarprojHelper.h"
#include "stir_starproj/StarprojObjective.h"

#include <string>

START_NAMESPACE_STIR

class PoissonLogLikelihoodWithLinearModelForMeanAndProjDataStarproj
    : public RegisteredParsingObject<PoissonLogLikelihoodWithLinearModelForMeanAndProjDataStarproj,
                                     GeneralisedObjectiveFunction<DiscretisedDensity<3, float>>,
                                     PoissonLogLikelihoodWithLinearModelForMeanAndProjData<DiscretisedDensity<3, float>>>,
      public StarprojObjectiveOnDevices
{
  typedef DiscretisedDensity<3, float> TargetT;
  typedef RegisteredParsingObject<PoissonLogLikelihoodWithLinearModelForMeanAndProjDataStarproj,
                                  GeneralisedObjectiveFunction<TargetT>,
                                  PoissonLogLikelihoodWithLinearModelForMeanAndProjData<TargetT>>
      base_type;

public:
  static const char* const registered_name;

  PoissonLogLikelihoodWithLinearModelForMeanAndProjDataStarproj();
  ~PoissonLogLikelihoodWithLinearModelForMeanAndProjDataStarproj() override;

  StarprojSettings& starproj_settings() { return _settings; }

  void actual_compute_subset_gradient_without_penalty(TargetT& gradient,
                                                      const TargetT& current_estimate,
                                                      const int subset_num,
                                                      const bool add_sensitivity) override;
  void add_subset_sensitivity(TargetT& sensitivity, const int subset_num) const override;
  void multiplicative_update_on_devices(
      const TargetT& estimate, int subset_num, const TargetT& sensitivity, float lo, float hi) override;

protected:
  Succeeded set_up_before_sensitivity(shared_ptr<const TargetT> const& target_sptr) override;
  double actual_compute_objective_function_without_penalty(const TargetT& current_estimate, const int subset_num) override;
  Succeeded actual_add_multiplication_with_approximate_sub_Hessian_without_penalty(TargetT& output,
                                                                                   const TargetT& input,
                                                                                   const int subset_num) const override;
  Succeeded actual_accumulate_sub_Hessian_times_input_without_penalty(TargetT& output,
                                                                      const TargetT& current_image_estimate,
                                                                      const TargetT& input,
                                                                      const int subset_num) const override;
  bool actual_subsets_are_approximately_balanced(std::string& warning_message) const override;

  void set_defaults() override;
  void initialise_keymap() override;
  bool post_processing() override;

private:
  struct Inputs; // what set_up registered with starproj besides the LORs
  StarprojSettings _settings;
};

END_NAMESPACE_STIR

#endif
