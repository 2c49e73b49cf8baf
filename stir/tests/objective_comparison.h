// SPDX-License-Identifier: Apache-2.0
// What the objective-function test helpers (starproj_stir_objective, starproj_stir_lm_objective) share: image
// differences, values per bin made from a hash, the estimate they compare at, and an objective function's set-up.
#ifndef STARPROJ_STIR_TESTS_OBJECTIVE_COMPARISON_H
#define STARPROJ_STIR_TESTS_OBJECTIVE_COMPARISON_H

#include "stir/DiscretisedDensity.h"
#include "stir/ExamInfo.h"
#include "stir/ProjDataInMemory.h"
#include "stir/ProjDataInterfile.h"
#include "stir/ProjDataInfo.h"
#include "stir/Succeeded.h"
#include "stir/Viewgram.h"
#include "stir/recon_buildblock/BinNormalisationFromProjData.h"
#include "stir/recon_buildblock/PoissonLogLikelihoodWithLinearModelForMean.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <memory>

namespace objective_comparison
{
using namespace stir;
typedef DiscretisedDensity<3, float> Image;

//! |test - ref| / |ref| (L2; |test - ref| when ref is 0)
inline double
rel_l2(const Image& ref, const Image& test)
{
  double num = 0, den = 0;
  auto t = test.begin_all();
  for (auto r = ref.begin_all(); r != ref.end_all(); ++r, ++t)
    {
      num += (double(*t) - *r) * (double(*t) - *r);
      den += double(*r) * *r;
    }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

inline double
max_abs(const Image& img)
{
  double m = 0;
  for (auto v = img.begin_all(); v != img.end_all(); ++v)
    m = std::max(m, std::fabs(double(*v)));
  return m;
}

//! a deterministic, well mixed integer for the integers given
inline unsigned
hash_of(std::initializer_list<int> keys)
{
  unsigned h = 2166136261u;
  for (int k : keys)
    h = (h ^ static_cast<unsigned>(k + 1000)) * 16777619u;
  h ^= h >> 13;
  h *= 0x5bd1e995u;
  return h ^ (h >> 15);
}
//! a deterministic value in [lo, hi) for the integers given
inline float
hashed(std::initializer_list<int> keys, float lo, float hi)
{
  return lo + (hi - lo) * float(hash_of(keys) % 100003u) / 100003.F;
}

//! values per bin in [lo, hi), the same for every TOF bin of a LOR (a normalisation: STIR's listmode objective
//! functions and starproj's models take one factor per LOR)
inline shared_ptr<ProjDataInMemory>
bin_values(const shared_ptr<const ExamInfo>& exam, const shared_ptr<const ProjDataInfo>& pdi, float lo, float hi)
{
  auto out = std::make_shared<ProjDataInMemory>(exam, pdi);
  for (int s = pdi->get_min_segment_num(); s <= pdi->get_max_segment_num(); ++s)
    for (int v = pdi->get_min_view_num(); v <= pdi->get_max_view_num(); ++v)
      for (int tof = pdi->get_min_tof_pos_num(); tof <= pdi->get_max_tof_pos_num(); ++tof)
        {
          Viewgram<float> vg = out->get_empty_viewgram(v, s, false, tof);
          for (int a = vg.get_min_axial_pos_num(); a <= vg.get_max_axial_pos_num(); ++a)
            for (int t = vg.get_min_tangential_pos_num(); t <= vg.get_max_tangential_pos_num(); ++t)
              vg[a][t] = hashed({s, v, a, t}, lo, hi);
          out->set_viewgram(vg);
        }
  return out;
}

//! the projection data p written to an Interfile file name (.hs and .s) as STIR writes projection data, and read back
//! as STIR reads a .par's file name: what a "From ProjData" normalisation or an additive sinogram in files gives
inline shared_ptr<ProjData>
through_file(const shared_ptr<ProjData>& p, const std::string& name)
{
  {
    ProjDataInterfile file(p->get_exam_info_sptr(), p->get_proj_data_info_sptr(), name);
    file.fill(*p);
  }
  return ProjData::read_from_file(name);
}

//! the estimate the objective functions are compared at: not the phantom, positive (half the phantom plus a fifth of
//! its largest value); the Hessian products' direction is the phantom itself
inline std::unique_ptr<Image>
estimate_from(const Image& phantom)
{
  std::unique_ptr<Image> x(phantom.clone());
  const float offset = 0.2F * float(max_abs(phantom));
  for (auto v = x->begin_all(); v != x->end_all(); ++v)
    *v = 0.5F * *v + offset;
  return x;
}

//! sets an objective function up as the comparisons need it: its subsets, their sensitivities computed by its set_up,
//! and, when norm is given, that normalisation and the additive term; false (with a message) when set_up fails
inline bool
set_up_for_comparison(PoissonLogLikelihoodWithLinearModelForMean<Image>& f,
                      int num_subsets,
                      const shared_ptr<ProjData>& norm,
                      const shared_ptr<ProjData>& additive,
                      const Image& image,
                      const char* program)
{
  f.set_num_subsets(num_subsets);
  f.set_recompute_sensitivity(true);
  f.set_use_subset_sensitivities(true);
  if (norm)
    {
      f.set_normalisation_sptr(std::make_shared<BinNormalisationFromProjData>(norm));
      f.set_additive_proj_data_sptr(additive);
    }
  if (f.set_up(shared_ptr<Image>(image.clone())) != Succeeded::yes)
    {
      std::fprintf(stderr, "%s: set_up failed\n", program);
      return false;
    }
  return true;
}
} // namespace objective_comparison

#endif
