// SPDX-License-Identifier: Apache-2.0
// Checks that an OSMAPOSL subset iteration with the "Starproj" pair projects only its subset's LORs (test helper).
//   starproj_stir_subset_lors OSMAPOSL.par
// Sets up the reconstruction's objective function (the .par must use "projector pair type := Starproj"), then for
// every subset computes the subset gradient as OSMAPOSL does and reads starproj's worker statistics: the LORs
// projected must be those of the subset's viewgrams once forward and once back (times the TOF positions' share:
// each LOR counts once per projection whatever its TOF bins). Exit status 0 when every subset matches.

#include "stir/DiscretisedDensity.h"
#include "stir/OSMAPOSL/OSMAPOSLReconstruction.h"
#include "stir/ProjData.h"
#include "stir/ProjDataInfo.h"
#include "stir/recon_buildblock/PoissonLogLikelihoodWithLinearModelForMeanAndProjData.h"
#include "stir/recon_buildblock/ProjectorByBinPair.h"
#include "stir/recon_buildblock/find_basic_vs_nums_in_subsets.h"

#include <starproj.h>

#include <cstdlib>
#include <iostream>
#include <memory>

using namespace stir;
typedef DiscretisedDensity<3, float> Image;

static int64_t
projected_lors()
{
  int64_t total = 0;
  for (int w = 0; w < sproj_num_workers(); ++w)
    {
      struct sproj_worker_stats stats;
      if (sproj_worker_stats(w, &stats) == SPROJ_OK)
        total += stats.lors;
    }
  return total;
}

int
main(int argc, char** argv)
{
  if (argc != 2)
    {
      std::cerr << "usage: " << argv[0] << " OSMAPOSL.par\n";
      return 2;
    }
  OSMAPOSLReconstruction<Image> reconstruction(argv[1]);
  auto* objective = dynamic_cast<PoissonLogLikelihoodWithLinearModelForMeanAndProjData<Image>*>(
      reconstruction.get_objective_function_sptr().get());
  if (!objective)
    {
      std::cerr << "the objective function is not PoissonLogLikelihoodWithLinearModelForMeanAndProjData\n";
      return 2;
    }
  const int num_subsets = reconstruction.get_num_subsets();
  objective->set_num_subsets(num_subsets);
  shared_ptr<Image> estimate(objective->construct_target_ptr());
  estimate->fill(1.F);
  if (objective->set_up(estimate) != Succeeded::yes)
    return 2;
  const ProjDataInfo& info = *objective->get_proj_data().get_proj_data_info_sptr();
  const auto* symmetries = objective->get_projector_pair().get_symmetries_used();
  int failures = 0;
  int64_t all = 0;
  for (int subset = 0; subset < num_subsets; ++subset)
    {
      int64_t expected = 0;
      for (const auto& vs : detail::find_basic_vs_nums_in_subset(
               info, *symmetries, info.get_min_segment_num(), info.get_max_segment_num(), subset, num_subsets))
        expected += int64_t(info.get_num_axial_poss(vs.segment_num())) * info.get_num_tangential_poss();
      shared_ptr<Image> gradient(estimate->get_empty_copy());
      sproj_wait_all();
      sproj_stats_reset();
      objective->compute_sub_gradient_without_penalty_plus_sensitivity(*gradient, *estimate, subset);
      sproj_wait_all();
      const int64_t counted = projected_lors();
      all += expected;
      const bool ok = counted == 2 * expected;
      failures += !ok;
      std::cout << "subset " << subset << " of " << num_subsets << ": " << counted << " LORs projected, expected 2 x "
                << expected << (ok ? "" : "  MISMATCH") << "\n";
    }
  const int64_t total = int64_t(info.size_all()) / info.get_num_tof_poss();
  std::cout << "the subsets cover " << all << " of " << total << " LORs\n";
  if (all != total)
    ++failures;
  return failures ? 1 : 0;
}
