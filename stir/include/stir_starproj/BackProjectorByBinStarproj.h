// SPDX-License-Identifier: Apache-2.0
// The "Starproj" back projector.
#ifndef STIR_STARPROJ_BACKPROJECTORBYBINSTARPROJ_H
#define STIR_STARPROJ_BACKPROJECTORBYBINSTARPROJ_H

#include "stir/recon_buildblock/BackProjectorByBin.h"
#include "stir_starproj/StarprojProjector.h"

#include <memory>
#include <mutex>
#include <vector>

START_NAMESPACE_STIR

//! What the back projector keeps resident; for TOF data, the timing positions of each viewgram that arrived since its
//! last back projection (a viewgram's chunk is back projected once all its timing positions have arrived, or at
//! get_output).
struct StarprojBackResident : StarprojResident
{
  std::vector<std::vector<char>> arrived;
  std::vector<int> num_arrived;
  std::unique_ptr<std::mutex[]> chunk_locks;

  explicit StarprojBackResident(const std::shared_ptr<StarprojGeometry>& g);
  //! TOF: back projects what arrived for chunk c (the caller holds its lock)
  void submit_tof_chunk(int c);
};

//! Back projector on starproj's resident data (registered as "Starproj").
/*!
  start_accumulating_in_new_target zeroes the resident image; each related-viewgrams call copies its values into the
  viewgram's chunk of the resident projection vector and submits the back projection of that chunk only; the
  results add up on the devices (StarPU reductions) until get_output, which waits and copies the image out. Calls
  may come from STIR's OpenMP threads at once.
*/
class BackProjectorByBinStarproj
    : public StarprojRegisteredProjector<BackProjectorByBinStarproj, BackProjectorByBin, StarprojBackResident>
{
public:
  static const char* const registered_name;

  BackProjectorByBinStarproj();
  //! copies the settings and shares the LOR registration; the resident image is the copy's own
  BackProjectorByBinStarproj(const BackProjectorByBinStarproj& other) = default;
  BackProjectorByBinStarproj& operator=(const BackProjectorByBinStarproj&) = delete;

  void start_accumulating_in_new_target() override;
  void get_output(DiscretisedDensity<3, float>& density) const override;
  BackProjectorByBinStarproj* clone() const override;

protected:
  void actual_back_project(const RelatedViewgrams<float>& viewgrams,
                           const int min_axial_pos_num,
                           const int max_axial_pos_num,
                           const int min_tangential_pos_num,
                           const int max_tangential_pos_num) override;
};

END_NAMESPACE_STIR

#endif
