// SPDX-License-Identifier: Apache-2.0
// The "Starproj" forward projector: each related-viewgrams call projects its viewgrams' LORs on the resident image.

#include "stir_starproj/ForwardProjectorByBinStarproj.h"

#include "stir/DiscretisedDensity.h"
#include "stir/ProjDataInfo.h"
#include "stir/RelatedViewgrams.h"
#include "stir/error.h"
#include "stir/is_null_ptr.h"

#include <mutex>
#include <vector>

START_NAMESPACE_STIR

const char* const ForwardProjectorByBinStarproj::registered_name = "Starproj";

StarprojForwardResident::StarprojForwardResident(const std::shared_ptr<StarprojGeometry>& g)
    : StarprojResident(g, "forward projector")
{
  if (g->is_tof())
    {
      projected_generation.assign(g->num_chunks(), 0);
      chunk_locks.reset(new std::mutex[g->num_chunks()]);
    }
}

ForwardProjectorByBinStarproj::ForwardProjectorByBinStarproj()
    : StarprojRegisteredProjector<ForwardProjectorByBinStarproj, ForwardProjectorByBin, StarprojForwardResident>(
        "ForwardProjectorByBinStarproj", "Forward Projector Using Starproj Parameters")
{
  set_defaults();
}

void
ForwardProjectorByBinStarproj::set_input(const DiscretisedDensity<3, float>& density)
{
  StarprojForwardResident& r = resident("set_input");
  r.times.start();
  const int rim = this->rim();
  // waits for projections still reading the previous image, then replaces it, once for all viewgrams
  starproj_check(sproj_image_sync(r.img, SPROJ_SYNC_WRITE), "sproj_image_sync");
  r.times.mark("wait");
  if (is_null_ptr(_pre_data_processor_sptr) && _density_sptr && _density_sptr->has_same_characteristics(density))
    {
      // the base class's copy of the image serves only its checks (characteristics, exam info) here: projections
      // read starproj's buffer, filled from the caller's image in one pass on the cores the GPU workers leave
      _density_sptr->set_exam_info(density.get_exam_info());
      starproj_image_to_array(density, r.image.data(), rim, r.copy_threads, &r.copy_stats);
    }
  else
    {
      ForwardProjectorByBin::set_input(density); // copy, and the pre data processor
      starproj_image_to_array(*_density_sptr, r.image.data(), rim, r.copy_threads, &r.copy_stats);
    }
  r.times.mark("copy");
  starproj_check(sproj_image_upload(r.img, SPROJ_ALL_GPUS), "sproj_image_upload");
  r.times.mark("upload");
  ++r.generation;
}

void
ForwardProjectorByBinStarproj::actual_forward_project(RelatedViewgrams<float>& viewgrams,
                                                      const int min_axial_pos_num,
                                                      const int max_axial_pos_num,
                                                      const int min_tangential_pos_num,
                                                      const int max_tangential_pos_num)
{
  StarprojForwardResident& r = resident("forward projection");
  StarprojCallClock clock(r.call_times);
  const StarprojGeometry& g = *_geometry;
  sproj_chunks* chunks = g.chunks();
  const int num_tang = g.num_tangential_poss();
  const int num_bins = g.num_tof_bins();

  std::vector<int> chunk_list;
  for (const auto& viewgram : viewgrams)
    chunk_list.push_back(g.chunk_of(viewgram.get_segment_num(), viewgram.get_view_num()));

  if (!g.is_tof())
    {
      // all the group's viewgrams in one request, then wait for each
      starproj_check(sproj_fwd_chunks(r.img, r.proj, chunks, chunk_list.data(), static_cast<int>(chunk_list.size())),
                     "sproj_fwd_chunks");
      clock.lap(StarprojCallTimes::submit);
      for (int c : chunk_list)
        starproj_check(sproj_proj_sync(r.proj, chunks, c, SPROJ_SYNC_READ), "sproj_proj_sync");
      clock.lap(StarprojCallTimes::sync);
    }
  else
    {
      for (int c : chunk_list)
        {
          std::lock_guard<std::mutex> lock(r.chunk_locks[c]);
          if (r.projected_generation[c] == r.generation)
            continue;
          starproj_check(sproj_fwd_tof_sino(r.img, r.proj, chunks, c, g.tof()), "sproj_fwd_tof_sino");
          clock.lap(StarprojCallTimes::submit);
          starproj_check(sproj_proj_sync(r.proj, chunks, c, SPROJ_SYNC_READ), "sproj_proj_sync");
          clock.lap(StarprojCallTimes::sync);
          r.projected_generation[c] = r.generation;
        }
    }

  std::size_t i = 0;
  for (auto& viewgram : viewgrams)
    {
      const int c = chunk_list[i++];
      const int min_axial = g.min_axial_pos_num(viewgram.get_segment_num());
      const int bin = g.is_tof() ? viewgram.get_timing_pos_num() - g.min_tof_pos_num() : 0;
      for (int a = min_axial_pos_num; a <= max_axial_pos_num; ++a)
        {
          const int64_t row = g.first_lor(c) + int64_t(a - min_axial) * num_tang - g.min_tangential_pos_num();
          for (int t = min_tangential_pos_num; t <= max_tangential_pos_num; ++t)
            viewgram[a][t] = r.values[(row + t) * num_bins + bin];
        }
    }
  clock.lap(StarprojCallTimes::values);
}

END_NAMESPACE_STIR
