// SPDX-License-Identifier: Apache-2.0
#ifndef STIR_STARPROJ_FORWARDPROJECTORBYBINSTARPROJ_H
#define STIR_STARPROJ_FORWARDPROJECTORBYBINSTARPROJ_H

#include "stir/RegisteredParsingObject.h"
#include "stir/recon_buildblock/ForwardProjectorByBin.h"
#include "stir_starproj/StarprojHelper.h"

#include <memory>

START_NAMESPACE_STIR

class DataSymmetriesForViewSegmentNumbers;

//! Forward projector on starproj's resident data (registered as "Starproj").
/*!
  set_up registers the LORs of the projection data once (unless the pair already did); set_input copies the image
  to starproj's buffer and uploads it; each related-viewgrams call projects only those viewgrams' LORs (one chunk
  per viewgram) on the resident data and waits for them. Calls may come from STIR's OpenMP threads at once.
  For TOF data, the first call of a viewgram projects all its TOF bins, later calls for its other timing positions
  read them.
*/
class ForwardProjectorByBinStarproj : public RegisteredParsingObject<ForwardProjectorByBinStarproj, ForwardProjectorByBin>
{
public:
  static const char* const registered_name;

  ForwardProjectorByBinStarproj();
  ~ForwardProjectorByBinStarproj() override;
  ForwardProjectorByBinStarproj(const ForwardProjectorByBinStarproj&) = delete;
  ForwardProjectorByBinStarproj& operator=(const ForwardProjectorByBinStarproj&) = delete;

  void set_up(const shared_ptr<const ProjDataInfo>& proj_data_info_sptr,
              const shared_ptr<const DiscretisedDensity<3, float>>& density_info_sptr) override;
  const DataSymmetriesForViewSegmentNumbers* get_symmetries_used() const override;
  void set_input(const DiscretisedDensity<3, float>& density) override;

  StarprojSettings& settings() { return _settings; }
  //! used by the pair: both projectors share one LOR registration
  void set_geometry(const std::shared_ptr<StarprojGeometry>& geometry) { _geometry = geometry; }

protected:
  void actual_forward_project(RelatedViewgrams<float>& viewgrams,
                              const int min_axial_pos_num,
                              const int max_axial_pos_num,
                              const int min_tangential_pos_num,
                              const int max_tangential_pos_num) override;
  void set_defaults() override;
  void initialise_keymap() override;
  bool post_processing() override;

private:
  struct Resident;
  StarprojSettings _settings;
  shared_ptr<DataSymmetriesForViewSegmentNumbers> _symmetries_sptr;
  std::shared_ptr<StarprojGeometry> _geometry;
  std::unique_ptr<Resident> _resident;
};

END_NAMESPACE_STIR

#endif
