// SPDX-License-Identifier: Apache-2.0
/*
  STIR's OSMAPOSL whose updates, with an objective function using Starproj (projection data or listmode) and no
  prior, are done where starproj keeps the data: the gradient, the division by the sensitivity, the bounds on the
  relative change and the multiplication are one task graph per sub-iteration on the devices, and the estimate comes
  to the host only when STIR reads it (StarprojIterativeOnDevices). Otherwise (a prior, an inter-update filter,
  update images written, another objective function) it is STIR's OSMAPOSL as it is.
*/
#ifndef STIR_STARPROJ_OSMAPOSLRECONSTRUCTIONSTARPROJ_H
#define STIR_STARPROJ_OSMAPOSLRECONSTRUCTIONSTARPROJ_H

#include "stir/DiscretisedDensity.h"
#include "stir/OSMAPOSL/OSMAPOSLReconstruction.h"
#include "stir_starproj/StarprojIterativeOnDevices.h"

#include <string>

START_NAMESPACE_STIR

class OSMAPOSLReconstructionStarproj
    : public StarprojIterativeOnDevices<OSMAPOSLReconstruction<DiscretisedDensity<3, float>>>
{
public:
  explicit OSMAPOSLReconstructionStarproj(const std::string& parameter_filename = "");
  void update_estimate(TargetT& current_image_estimate) override;
};

END_NAMESPACE_STIR

#endif
