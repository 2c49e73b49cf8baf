// SPDX-License-Identifier: Apache-2.0
// The "Starproj" forward projector.
#ifndef STIR_STARPROJ_FORWARDPROJECTORBYBINSTARPROJ_H
#define STIR_STARPROJ_FORWARDPROJECTORBYBINSTARPROJ_H

#include "stir/recon_buildblock/ForwardProjectorByBin.h"
#include "stir_starproj/StarprojProjector.h"

#include <memory>
#include <mutex>
#include <vector>

START_NAMESPACE_STIR

//! What the forward projector keeps resident; for TOF data, which viewgrams were projected since the last set_input
//! (the first call for a viewgram projects all its TOF bins, later calls for its other timing positions read them).
struct StarprojForwardResident : StarprojResident
{
  unsigned generation = 0; // set_input's count
  std::vector<unsigned> projected_generation;
  std::unique_ptr<std::mutex[]> chunk_locks;

  explicit StarprojForwardResident(const std::shared_ptr<StarprojGeometry>& g);
};

//! Forward projector on starproj's resident data (registered as "Starproj").
/*!
  set_up registers the LORs of the projection data once (unless the pair already did); set_input copies the image
  to starproj's buffer and uploads it; each related-viewgrams call projects only those viewgrams' LORs (one chunk
  per viewgram) on the resident data and waits for them. Calls may come from STIR's OpenMP threads at once.
*/
class ForwardProjectorByBinStarproj
    : public StarprojRegisteredProjector<ForwardProjectorByBinStarproj, ForwardProjectorByBin, StarprojForwardResident>
{
public:
  static const char* const registered_name;

  ForwardProjectorByBinStarproj();
  ForwardProjectorByBinStarproj(const ForwardProjectorByBinStarproj&) = delete;
  ForwardProjectorByBinStarproj& operator=(const ForwardProjectorByBinStarproj&) = delete;

  void set_input(const DiscretisedDensity<3, float>& density) override;

protected:
  void actual_forward_project(RelatedViewgrams<float>& viewgrams,
                              const int min_axial_pos_num,
                              const int max_axial_pos_num,
                              const int min_tangential_pos_num,
                              const int max_tangential_pos_num) override;
};

END_NAMESPACE_STIR

#endif
