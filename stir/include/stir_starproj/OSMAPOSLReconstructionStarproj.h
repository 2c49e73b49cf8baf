// SPDX-License-Identifier: Apache-2.0
/*
  STIR's OSMAPOSL whose updates, with an objective function using Starproj (projection data or listmode) and no
  prior, are done where starproj keeps the data: the gradient, the division by the sensitivity, the bounds on the
  relative change and the multiplication are one task graph per sub-iteration on the devices, and the estimate comes
  to the host only when STIR reads it (objective function reports, filters, saving, the last sub-iteration). Otherwise (a prior, an
  inter-update filter, update images written, another objective function) it is STIR's OSMAPOSL as it is.
*/
#ifndef STIR_STARPROJ_OSMAPOSLRECONSTRUCTIONSTARPROJ_H
#define STIR_STARPROJ_OSMAPOSLRECONSTRUCTIONSTARPROJ_H

#include "stir/DiscretisedDensity.h"
#include "stir/OSMAPOSL/OSMAPOSLReconstruction.h"

#include <string>

START_NAMESPACE_STIR

class StarprojObjectiveOnDevices;

class OSMAPOSLReconstructionStarproj : public OSMAPOSLReconstruction<DiscretisedDensity<3, float>>
{
  typedef DiscretisedDensity<3, float> TargetT;

public:
  explicit OSMAPOSLReconstructionStarproj(const std::string& parameter_filename = "");
  void update_estimate(TargetT& current_image_estimate) override;
  //! sub-iterations whose update ran on the devices, and those STIR did on the host
  int updates_on_devices() const { return _on_devices; }
  int updates_on_host() const { return _on_host; }

protected:
  void end_of_iteration_processing(TargetT& current_estimate) override;

private:
  StarprojObjectiveOnDevices* starproj_objective() const;
  //! whether STIR's end-of-sub-iteration work reads or changes the estimate at this sub-iteration
  bool host_needs_estimate() const;
  int _on_devices = 0, _on_host = 0;
};

END_NAMESPACE_STIR

#endif
