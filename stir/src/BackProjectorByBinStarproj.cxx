// SPDX-License-Identifier: Apache-2.0
// The "Starproj" back projector: related-viewgrams calls back project their viewgrams' LORs into a resident image
// that accumulates on the devices until get_output.

#include "stir_starproj/BackProjectorByBinStarproj.h"

#include "stir/DataProcessor.h"
#include "stir/DiscretisedDensity.h"
#include "stir/ProjDataInfo.h"
#include "stir/RelatedViewgrams.h"
#include "stir/error.h"
#include "stir/is_null_ptr.h"

#include <algorithm>
#ifdef _OPENMP
#  include <omp.h>
#endif
#include <mutex>
#include <vector>

START_NAMESPACE_STIR

const char* const BackProjectorByBinStarproj::registered_name = "Starproj";

StarprojBackResident::StarprojBackResident(const std::shared_ptr<StarprojGeometry>& g)
    : StarprojResident(g, "back projector")
{
  if (g->is_tof())
    {
      arrived.assign(g->num_chunks(), std::vector<char>(g->num_tof_bins(), 0));
      num_arrived.assign(g->num_chunks(), 0);
      chunk_locks.reset(new std::mutex[g->num_chunks()]);
    }
}

void
StarprojBackResident::submit_tof_chunk(int c)
{
  starproj_check(sproj_back_tof_sino(img, proj, geometry->chunks(), c, geometry->tof()), "sproj_back_tof_sino");
  std::fill(arrived[c].begin(), arrived[c].end(), 0);
  num_arrived[c] = 0;
}

BackProjectorByBinStarproj::BackProjectorByBinStarproj()
    : StarprojRegisteredProjector<BackProjectorByBinStarproj, BackProjectorByBin, StarprojBackResident>(
        "BackProjectorByBinStarproj", "Back Projector Using Starproj Parameters")
{
  set_defaults();
}

BackProjectorByBinStarproj*
BackProjectorByBinStarproj::clone() const
{
  return new BackProjectorByBinStarproj(*this);
}

void
BackProjectorByBinStarproj::start_accumulating_in_new_target()
{
  // Not the base class's version: it zeroes its own image and one image per OpenMP thread that ever called
  // back_project (STIR allocates those for projectors that accumulate on the host), 16 x 60 MB on a 16-core host for
  // the mMR, 0.16 s a call; this projector accumulates on the devices and uses none of them.
  StarprojBackResident& r = resident("start_accumulating_in_new_target");
#ifdef _OPENMP
  if (omp_get_num_threads() != 1)
    error("BackProjectorByBinStarproj::start_accumulating_in_new_target cannot be called inside a thread");
#endif
  r.times.start();
  // zeros written where the back projections run (a GPU): the previous image neither comes home nor goes back
  starproj_check(sproj_image_zero(r.img), "sproj_image_zero");
  r.times.mark("zero");
  for (std::size_t c = 0; c < r.arrived.size(); ++c)
    {
      std::fill(r.arrived[c].begin(), r.arrived[c].end(), 0);
      r.num_arrived[c] = 0;
    }
}

void
BackProjectorByBinStarproj::actual_back_project(const RelatedViewgrams<float>& viewgrams,
                                                const int min_axial_pos_num,
                                                const int max_axial_pos_num,
                                                const int min_tangential_pos_num,
                                                const int max_tangential_pos_num)
{
  StarprojBackResident& r = resident("back projection");
  StarprojCallClock clock(r.call_times);
  const StarprojGeometry& g = *_geometry;
  sproj_chunks* chunks = g.chunks();
  const int num_tang = g.num_tangential_poss();
  const int num_bins = g.num_tof_bins();

  for (const auto& viewgram : viewgrams)
    {
      const int c = g.chunk_of(viewgram.get_segment_num(), viewgram.get_view_num());
      const int min_axial = g.min_axial_pos_num(viewgram.get_segment_num());
      const int num_axial = viewgram.get_num_axial_poss();
      const int64_t first = g.first_lor(c);
      const int64_t count = int64_t(num_axial) * num_tang;
      // copies the requested window of the viewgram into bin `bin` of the chunk's values (the rest stays 0)
      auto fill_values = [&](int bin) {
        for (int a = min_axial_pos_num; a <= max_axial_pos_num; ++a)
          {
            const int64_t row = first + int64_t(a - min_axial) * num_tang - g.min_tangential_pos_num();
            for (int t = min_tangential_pos_num; t <= max_tangential_pos_num; ++t)
              r.values[(row + t) * num_bins + bin] = viewgram[a][t];
          }
      };
      if (!g.is_tof())
        {
          // the host copy of this chunk becomes ours until the back projection is submitted
          starproj_check(sproj_proj_sync(r.proj, chunks, c, SPROJ_SYNC_WRITE), "sproj_proj_sync");
          clock.lap(StarprojCallTimes::sync);
          std::fill(r.values.begin() + first, r.values.begin() + first + count, 0.F);
          fill_values(0);
          clock.lap(StarprojCallTimes::values);
          starproj_check(sproj_back(r.img, r.proj, chunks, c), "sproj_back");
          clock.lap(StarprojCallTimes::submit);
        }
      else
        {
          const int bin = viewgram.get_timing_pos_num() - g.min_tof_pos_num();
          std::lock_guard<std::mutex> lock(r.chunk_locks[c]);
          if (r.arrived[c][bin]) // the same timing position again: back project what is there first
            {
              r.submit_tof_chunk(c);
              clock.lap(StarprojCallTimes::submit);
            }
          if (r.num_arrived[c] == 0)
            {
              starproj_check(sproj_proj_sync(r.proj, chunks, c, SPROJ_SYNC_WRITE), "sproj_proj_sync");
              clock.lap(StarprojCallTimes::sync);
              std::fill(r.values.begin() + first * num_bins, r.values.begin() + (first + count) * num_bins, 0.F);
            }
          fill_values(bin);
          clock.lap(StarprojCallTimes::values);
          r.arrived[c][bin] = 1;
          if (++r.num_arrived[c] == num_bins)
            {
              r.submit_tof_chunk(c);
              clock.lap(StarprojCallTimes::submit);
            }
        }
    }
}

void
BackProjectorByBinStarproj::get_output(DiscretisedDensity<3, float>& density) const
{
  StarprojBackResident& r = resident("get_output");
  {
    std::string explanation;
    if (!_density_sptr->has_same_characteristics(density, explanation))
      error("BackProjectorByBinStarproj::get_output: the image differs from the one of set_up: " + explanation);
  }
  // TOF viewgrams of which only some timing positions came
  for (std::size_t c = 0; c < r.num_arrived.size(); ++c)
    if (r.num_arrived[c] > 0)
      r.submit_tof_chunk(static_cast<int>(c));
  r.times.start();
  // waits for the back projections and the reduction of the workers' contributions
  starproj_check(sproj_image_sync(r.img, SPROJ_SYNC_READ), "sproj_image_sync");
  r.times.mark("wait and copy home");
  starproj_array_to_image(r.image.data(), density, rim(), r.copy_threads, &r.copy_stats);
  r.times.mark("copy");
  if (!is_null_ptr(_post_data_processor_sptr))
    if (_post_data_processor_sptr->apply(density) != Succeeded::yes)
      error("BackProjectorByBinStarproj::get_output: the post data processor failed");
}

END_NAMESPACE_STIR
