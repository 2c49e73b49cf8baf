// SPDX-License-Identifier: Apache-2.0
#ifndef STIR_STARPROJ_BACKPROJECTORBYBINSTARPROJ_H
#define STIR_STARPROJ_BACKPROJECTORBYBINSTARPROJ_H

#include "stir/RegisteredParsingObject.h"
#include "stir/recon_buildblock/BackProjectorByBin.h"
#include "stir_starproj/StarprojHelper.h"

#include <memory>

START_NAMESPACE_STIR

class DataSymmetriesForViewSegmentNumbers;

//! Back projector on starproj's resident data (registered as "Starproj").
/*!
  start_accumulating_in_new_target zeroes the resident image; each related-viewgrams call copies its values into the
  viewgram's chunk of the resident projection vector and submits the back projection of that chunk only; the
  results add up on the devices (StarPU reductions) until get_output, which waits and copies the image out. Calls
  may come from STIR's OpenMP threads at once. For TOF data a viewgram's chunk is back projected once all its
  timing positions have arrived (or at get_output).
*/
class BackProjectorByBinStarproj : public RegisteredParsingObject<BackProjectorByBinStarproj, BackProjectorByBin>
{
public:
  static const char* const registered_name;

  BackProjectorByBinStarproj();
  //! copies the settings and shares the LOR registration; the resident image is the copy's own
  BackProjectorByBinStarproj(const BackProjectorByBinStarproj& other);
  BackProjectorByBinStarproj& operator=(const BackProjectorByBinStarproj&) = delete;
  ~BackProjectorByBinStarproj() override;

  void set_up(const shared_ptr<const ProjDataInfo>& proj_data_info_sptr,
              const shared_ptr<const DiscretisedDensity<3, float>>& density_info_sptr) override;
  const DataSymmetriesForViewSegmentNumbers* get_symmetries_used() const override;
  void start_accumulating_in_new_target() override;
  void get_output(DiscretisedDensity<3, float>& density) const override;
  BackProjectorByBinStarproj* clone() const override;

  StarprojSettings& settings() { return _settings; }
  void set_geometry(const std::shared_ptr<StarprojGeometry>& geometry) { _geometry = geometry; }

protected:
  void actual_back_project(const RelatedViewgrams<float>& viewgrams,
                           const int min_axial_pos_num,
                           const int max_axial_pos_num,
                           const int min_tangential_pos_num,
                           const int max_tangential_pos_num) override;
  void set_defaults() override;
  void initialise_keymap() override;
  bool post_processing() override;

private:
  struct Resident;
  void make_resident();
  StarprojSettings _settings;
  shared_ptr<DataSymmetriesForViewSegmentNumbers> _symmetries_sptr;
  std::shared_ptr<StarprojGeometry> _geometry;
  std::unique_ptr<Resident> _resident;
};

END_NAMESPACE_STIR

#endif
