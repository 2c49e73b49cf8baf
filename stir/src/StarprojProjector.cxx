// SPDX-License-Identifier: Apache-2.0
// What a "Starproj" projector keeps registered between one set_up and the next (StarprojProjector.h).

#include "stir_starproj/StarprojProjector.h"

#include "stir_starproj/StarprojRuntime.h"

START_NAMESPACE_STIR

StarprojResident::StarprojResident(const std::shared_ptr<StarprojGeometry>& g, const char* who)
    : geometry(g),
      image(g->num_voxels()),
      values(g->num_lors() * g->num_tof_bins(), 0.F),
      pinned_values(values.data(), values.size() * sizeof(float)),
      _who(who)
{
  copy_threads = starproj_host_threads();
  starproj_check(sproj_image_register(&img, image.data(), g->dims(), g->voxel_size(), g->origin()), "sproj_image_register");
  const int status = g->is_tof() ? sproj_proj_register_tof(&proj, values.data(), g->lors(), g->num_tof_bins())
                                 : sproj_proj_register(&proj, values.data(), g->lors());
  if (status != SPROJ_OK)
    {
      sproj_image_unregister(img);
      starproj_check(status, "sproj_proj_register");
    }
}

StarprojResident::~StarprojResident()
{
  if (verbosity > 1)
    {
      times.report(_who);
      copy_stats.report(_who);
      call_times.report(_who);
    }
  sproj_proj_unregister(proj);
  sproj_image_unregister(img);
}

END_NAMESPACE_STIR
