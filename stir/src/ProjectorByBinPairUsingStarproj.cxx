// SPDX-License-Identifier: Apache-2.0
// The "Starproj" projector pair: one LOR registration for the forward and the back projector.

#include "stir_starproj/ProjectorByBinPairUsingStarproj.h"

#include "stir/DiscretisedDensity.h"
#include "stir/ProjDataInfo.h"
#include "stir/Succeeded.h"
#include "stir/error.h"
#include "stir_starproj/BackProjectorByBinStarproj.h"
#include "stir_starproj/ForwardProjectorByBinStarproj.h"

START_NAMESPACE_STIR

const char* const ProjectorByBinPairUsingStarproj::registered_name = "Starproj";

ProjectorByBinPairUsingStarproj::ProjectorByBinPairUsingStarproj()
{
  this->forward_projector_sptr.reset(new ForwardProjectorByBinStarproj);
  this->back_projector_sptr.reset(new BackProjectorByBinStarproj);
  set_defaults();
}

void
ProjectorByBinPairUsingStarproj::set_defaults()
{
  base_type::set_defaults();
  _settings = StarprojSettings();
  pass_settings();
}

void
ProjectorByBinPairUsingStarproj::initialise_keymap()
{
  base_type::initialise_keymap();
  parser.add_start_key("Projector Pair Using Starproj Parameters");
  parser.add_stop_key("End Projector Pair Using Starproj Parameters");
  _settings.add_keys(parser);
}

bool
ProjectorByBinPairUsingStarproj::post_processing()
{
  if (!_settings.check())
    return true;
  pass_settings();
  return base_type::post_processing();
}

void
ProjectorByBinPairUsingStarproj::pass_settings()
{
  auto fwd = dynamic_pointer_cast<ForwardProjectorByBinStarproj>(this->forward_projector_sptr);
  auto back = dynamic_pointer_cast<BackProjectorByBinStarproj>(this->back_projector_sptr);
  if (!fwd || !back)
    error("ProjectorByBinPairUsingStarproj: internal error: the projectors are not Starproj's");
  fwd->settings() = _settings;
  back->settings() = _settings;
}

Succeeded
ProjectorByBinPairUsingStarproj::set_up(const shared_ptr<const ProjDataInfo>& proj_data_info_sptr,
                                        const shared_ptr<const DiscretisedDensity<3, float>>& density_info_sptr)
{
  pass_settings();
  if (!_settings.check())
    error("Starproj: invalid settings");
  if (!_geometry || !_geometry->matches(*proj_data_info_sptr, *density_info_sptr))
    {
      // the projectors' resident data go with the old geometry: they replace it in their set_up
      _geometry.reset();
      auto geometry = std::make_shared<StarprojGeometry>(proj_data_info_sptr, *density_info_sptr, _settings);
      _geometry = geometry;
    }
  dynamic_pointer_cast<ForwardProjectorByBinStarproj>(this->forward_projector_sptr)->set_geometry(_geometry);
  dynamic_pointer_cast<BackProjectorByBinStarproj>(this->back_projector_sptr)->set_geometry(_geometry);
  // the base class sets both projectors up; they find the geometry in place
  return base_type::set_up(proj_data_info_sptr, density_info_sptr);
}

END_NAMESPACE_STIR
