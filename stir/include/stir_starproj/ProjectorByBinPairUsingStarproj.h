// SPDX-License-Identifier: Apache-2.0
#ifndef STIR_STARPROJ_PROJECTORBYBINPAIRUSINGSTARPROJ_H
#define STIR_STARPROJ_PROJECTORBYBINPAIRUSINGSTARPROJ_H

#include "stir/RegisteredParsingObject.h"
#include "stir/recon_buildblock/ProjectorByBinPair.h"
#include "stir_starproj/StarprojGeometry.h"

#include <memory>

START_NAMESPACE_STIR

//! The "Starproj" forward and back projectors as a pair sharing one LOR registration.
class ProjectorByBinPairUsingStarproj
    : public RegisteredParsingObject<ProjectorByBinPairUsingStarproj, ProjectorByBinPair, ProjectorByBinPair>
{
  typedef RegisteredParsingObject<ProjectorByBinPairUsingStarproj, ProjectorByBinPair, ProjectorByBinPair> base_type;

public:
  static const char* const registered_name;

  ProjectorByBinPairUsingStarproj();
  //! registers the LORs once for both projectors (again only when the geometry changed), then sets both up
  Succeeded set_up(const shared_ptr<const ProjDataInfo>& proj_data_info_sptr,
                   const shared_ptr<const DiscretisedDensity<3, float>>& density_info_sptr) override;

  StarprojSettings& settings() { return _settings; }

private:
  void set_defaults() override;
  void initialise_keymap() override;
  bool post_processing() override;
  void pass_settings();
  StarprojSettings _settings;
  std::shared_ptr<StarprojGeometry> _geometry;
};

END_NAMESPACE_STIR

#endif
