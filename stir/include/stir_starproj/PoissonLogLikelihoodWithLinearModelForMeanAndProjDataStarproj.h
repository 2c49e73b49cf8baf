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

#include <starproj_recon.h>

#include <memory>
#include <mutex>
#include <vector>

START_NAMESPACE_STIR

class PoissonLogLikelihoodWithLinearModelForMeanAndProjDataStarproj
    : public RegisteredParsingObject<PoissonLogLikelihoodWithLinearModelForMeanAndProjDataStarproj,
                                     GeneralisedObjectiveFunction<DiscretisedDensity<3, float>>,
                                     PoissonLogLikelihoodWithLinearModelForMeanAndProjData<DiscretisedDensity<3, float>>>
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

  //! \name The estimate kept on the devices (OSMAPOSLReconstructionStarproj)
  //@{
  //! OSMAPOSL's update without a prior, done where the data are: estimate <- estimate * min(max(gradient plus
  //! sensitivity / sensitivity, lo), hi) for subset_num, with STIR's sensitivity of that subset: the one starproj
  //! keeps on the devices when STIR's are starproj's subset sensitivities, else STIR's image, uploaded once. The
  //! estimate is read from the host only when the devices do not hold it already; afterwards they hold the new one
  //! and the host's is stale until estimate_to_host(). Asynchronous.
  void multiplicative_update_on_devices(const TargetT& estimate, int subset_num, const TargetT& sensitivity, float lo, float hi);
  //! true while the devices hold a newer estimate than the host
  bool estimate_on_devices() const { return _estimate_on_devices; }
  //! brings the devices' estimate home (waits); the host's is then the current one
  void estimate_to_host(TargetT& estimate);
  //@}

  //! seconds spent in set_up's parts and in each kind of call, for verbosity 2 and the benchmarks
  const StarprojStepTimes& step_times() const { return _times; }

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
  struct Resident; // what set_up registered with starproj
  StarprojSettings _settings;
  std::shared_ptr<StarprojGeometry> _geometry;
  std::unique_ptr<Resident> _resident;
  mutable std::mutex _lock; // one call at a time on the resident images
  mutable StarprojStepTimes _times;
  mutable bool _estimate_on_devices = false; // the resident x holds an estimate newer than the caller's
  bool _sensitivities_are_ours = false;      // STIR's subset sensitivities are those starproj computed at set_up

  void release();
  //! copies a STIR image into one of the resident images (which must not be in use by pending tasks' writes)
  void load(const TargetT& image, sproj_image* img, float* buffer) const;
  //! waits for a resident image and adds scale times its values to a STIR image
  void add_to(TargetT& image, sproj_image* img, const float* buffer, float scale) const;
  //! adds scale times a host array in starproj's order to a STIR image (zero outside the kept cylinder)
  void add_array(TargetT& image, const float* values, float scale) const;
};

END_NAMESPACE_STIR

#endif
