// SPDX-License-Identifier: Apache-2.0
/*
  STIR's Poisson log-likelihood of listmode data, computed by starproj on resident events: the objective function
  "PoissonLogLikelihoodWithLinearModelForMeanAndListModeData using Starproj". It reads the keys of STIR's listmode
  objective functions (list mode filename, additive sinogram, Bin Normalisation, maximum segment, time frame, image
  size) and STIR's settings of the starproj runtime (devices, scheduler, ...). set_up reads the list once: every prompt
  of the frame becomes the LOR of its bin (the endpoints the "Starproj" pair projects) with its TOF bin, its
  normalisation factor and its additive term, registered with starproj where they stay; the sensitivities are back
  projections of the normalisation over the scanner's bins. Subset gradients (LM-OSEM: subset k holds the events whose
  view is k modulo the number of subsets, as STIR's sinogram subsets), objective values, subset sensitivities and
  Hessian products are starproj task graphs: a call moves the image it is given and the image it returns.
*/
#ifndef STIR_STARPROJ_POISSONLOGLIKELIHOODLISTMODESTARPROJ_H
#define STIR_STARPROJ_POISSONLOGLIKELIHOODLISTMODESTARPROJ_H

#include "stir/DiscretisedDensity.h"
#include "stir/recon_buildblock/PoissonLogLikelihoodWithLinearModelForMeanAndListModeData.h"
#include "stir_starproj/StarprojObjectiveFunction.h"

#include <cstdint>
#include <string>
#include <vector>

START_NAMESPACE_STIR

class PoissonLogLikelihoodWithLinearModelForMeanAndListModeDataStarproj
    : public StarprojRegisteredObjectiveFunction<
          PoissonLogLikelihoodWithLinearModelForMeanAndListModeDataStarproj,
          PoissonLogLikelihoodWithLinearModelForMeanAndListModeData<DiscretisedDensity<3, float>>>
{
  typedef StarprojRegisteredObjectiveFunction<PoissonLogLikelihoodWithLinearModelForMeanAndListModeDataStarproj,
                                              PoissonLogLikelihoodWithLinearModelForMeanAndListModeData<TargetT>>
      base_type;

public:
  static const char* const registered_name;

  PoissonLogLikelihoodWithLinearModelForMeanAndListModeDataStarproj();

  //! at most this many prompts are used (0: all of the frame)
  void set_num_events_to_use(long num) { this->num_events_to_use = num; }
  //! prompts set_up kept (in the frame, the segments processed and the data's bins)
  int64_t get_num_events() const { return _num_events; }
  //! events of each subset
  const std::vector<int64_t>& get_subset_num_events() const { return _subset_events; }

  int set_num_subsets(const int num_subsets) override;
  TargetT* construct_target_ptr() const override;

protected:
  Succeeded set_up_before_sensitivity(shared_ptr<const TargetT> const& target_sptr) override;
  //! refused: the approximate Hessian needs counts per bin, which events do not give (STIR's listmode objective
  //! function has none either)
  Succeeded actual_add_multiplication_with_approximate_sub_Hessian_without_penalty(TargetT& output,
                                                                                   const TargetT& input,
                                                                                   const int subset_num) const override;
  int num_views_in_subsets() const override;

  void initialise_keymap() override;
  bool post_processing() override;

private:
  struct Inputs; // the events and the scanner's factors, as registered with starproj
  int64_t _num_events = 0;
  std::vector<int64_t> _subset_events;

  //! set_up's work; throws (STIR's error()) on bad input, which set_up_before_sensitivity reports as Succeeded::no
  void set_up_events(const TargetT& target);
};

END_NAMESPACE_STIR

#endif
