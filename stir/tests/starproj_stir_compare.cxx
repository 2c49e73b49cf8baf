// SPDX-License-Identifier: Apache-2.0
// Compares the results of two projectors (test helper of stir/tests).
//   starproj_stir_compare proj A.hs B.hs TOL    every viewgram (segment, view, timing position):
//                                                max |a - b| <= TOL * max |a| (max over all of A); prints the worst
//   starproj_stir_compare image A.hv B.hv TOL   ||a - b||_2 <= TOL * ||a||_2; also prints max |a - b| / max |a|
//   starproj_stir_compare image-max A.hv B.hv TOL   the same, and max |a - b| <= TOL * max |a| too
//   starproj_stir_compare image-as-far A.hv B.hv C.hv D.hv TOL   A and B differ as much as C and D:
//                                                | ||a - b||_2 - ||c - d||_2 | <= TOL * ||c - d||_2
// Exit status 0 when within tolerance, 1 otherwise.

#include "stir/DiscretisedDensity.h"
#include "stir/IO/read_from_file.h"
#include "stir/ProjData.h"
#include "stir/ProjDataInfo.h"
#include "stir/Viewgram.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <string>

using namespace stir;

static int
compare_proj(const std::string& a_name, const std::string& b_name, double tol)
{
  shared_ptr<ProjData> a = ProjData::read_from_file(a_name);
  shared_ptr<ProjData> b = ProjData::read_from_file(b_name);
  const ProjDataInfo& info = *a->get_proj_data_info_sptr();
  if (!(info == *b->get_proj_data_info_sptr()))
    {
      std::cerr << "the two projection data have different geometries\n";
      return 1;
    }
  double max_a = 0;
  for (int s = info.get_min_segment_num(); s <= info.get_max_segment_num(); ++s)
    for (int k = info.get_min_tof_pos_num(); k <= info.get_max_tof_pos_num(); ++k)
      for (int v = info.get_min_view_num(); v <= info.get_max_view_num(); ++v)
        {
          const Viewgram<float> va = a->get_viewgram(v, s, false, k);
          max_a = std::max(max_a, static_cast<double>(va.find_max()));
          max_a = std::max(max_a, -static_cast<double>(va.find_min()));
        }
  if (max_a == 0)
    {
      std::cerr << "the first projection data are all 0\n";
      return 1;
    }
  double worst = 0;
  int worst_s = 0, worst_v = 0, worst_k = 0, failing = 0, checked = 0;
  for (int s = info.get_min_segment_num(); s <= info.get_max_segment_num(); ++s)
    for (int k = info.get_min_tof_pos_num(); k <= info.get_max_tof_pos_num(); ++k)
      for (int v = info.get_min_view_num(); v <= info.get_max_view_num(); ++v)
        {
          const Viewgram<float> va = a->get_viewgram(v, s, false, k);
          const Viewgram<float> vb = b->get_viewgram(v, s, false, k);
          double diff = 0;
          for (int ax = va.get_min_axial_pos_num(); ax <= va.get_max_axial_pos_num(); ++ax)
            for (int t = va.get_min_tangential_pos_num(); t <= va.get_max_tangential_pos_num(); ++t)
              {
                const double d = std::fabs(double(va[ax][t]) - double(vb[ax][t]));
                diff = std::max(diff, std::isfinite(d) ? d : HUGE_VAL);
              }
          const double rel = diff / max_a;
          ++checked;
          if (rel > tol && ++failing <= 20)
            std::cout << "  segment " << s << ", view " << v << ", timing position " << k << ": " << rel << "\n";
          if (rel > worst)
            {
              worst = rel;
              worst_s = s;
              worst_v = v;
              worst_k = k;
            }
        }
  std::cout << "viewgrams: " << checked << ", max |A| = " << max_a << ", worst max|A-B|/max|A| = " << worst
            << " (segment " << worst_s << ", view " << worst_v << ", timing position " << worst_k << "), " << failing
            << " above " << tol << "\n";
  return failing ? 1 : 0;
}

static int
compare_image(const std::string& a_name, const std::string& b_name, double tol, bool max_norm)
{
  shared_ptr<DiscretisedDensity<3, float>> a(read_from_file<DiscretisedDensity<3, float>>(a_name));
  shared_ptr<DiscretisedDensity<3, float>> b(read_from_file<DiscretisedDensity<3, float>>(b_name));
  if (!a->has_same_characteristics(*b))
    {
      std::cerr << "the two images have different characteristics\n";
      return 1;
    }
  double diff2 = 0, a2 = 0, max_diff = 0, max_a = 0;
  for (auto ia = a->begin_all_const(), ib = b->begin_all_const(); ia != a->end_all_const(); ++ia, ++ib)
    {
      const double d = double(*ia) - double(*ib);
      diff2 += d * d;
      a2 += double(*ia) * double(*ia);
      max_diff = std::max(max_diff, std::fabs(d));
      max_a = std::max(max_a, std::fabs(double(*ia)));
    }
  if (a2 == 0)
    {
      std::cerr << "the first image is all 0\n";
      return 1;
    }
  const double rel = std::sqrt(diff2 / a2);
  std::cout << "relative L2 difference " << rel << ", max|A-B|/max|A| = " << max_diff / max_a << " (tolerance " << tol
            << ")\n";
  const bool ok = std::isfinite(rel) && rel <= tol && (!max_norm || max_diff <= tol * max_a);
  return ok ? 0 : 1;
}

// ||a - b||_2 and ||a||_2; false (with a message) when the images have different characteristics
static bool
image_distance(const std::string& a_name, const std::string& b_name, double& diff, double& norm_a)
{
  shared_ptr<DiscretisedDensity<3, float>> a(read_from_file<DiscretisedDensity<3, float>>(a_name));
  shared_ptr<DiscretisedDensity<3, float>> b(read_from_file<DiscretisedDensity<3, float>>(b_name));
  if (!a->has_same_characteristics(*b))
    {
      std::cerr << a_name << " and " << b_name << " have different characteristics\n";
      return false;
    }
  double diff2 = 0, a2 = 0;
  for (auto ia = a->begin_all_const(), ib = b->begin_all_const(); ia != a->end_all_const(); ++ia, ++ib)
    {
      const double d = double(*ia) - double(*ib);
      diff2 += d * d;
      a2 += double(*ia) * double(*ia);
    }
  diff = std::sqrt(diff2);
  norm_a = std::sqrt(a2);
  return true;
}

static int
compare_distances(char** names, double tol)
{
  double ab, a, cd, c;
  if (!image_distance(names[0], names[1], ab, a) || !image_distance(names[2], names[3], cd, c))
    return 1;
  if (a == 0 || c == 0 || cd == 0)
    {
      std::cerr << "an image is all 0, or C and D are equal\n";
      return 1;
    }
  const double rel = std::fabs(ab - cd) / cd;
  std::cout << "||A-B||/||A|| = " << ab / a << ", ||C-D||/||C|| = " << cd / c << ": the distances differ by " << rel
            << " of ||C-D|| (tolerance " << tol << ")\n";
  return std::isfinite(rel) && rel <= tol ? 0 : 1;
}

int
main(int argc, char** argv)
{
  if (argc == 7 && std::string(argv[1]) == "image-as-far")
    return compare_distances(argv + 2, std::atof(argv[6]));
  if (argc != 5)
    {
      std::cerr << "usage: " << argv[0] << " proj|image|image-max A B tolerance\n"
                << "       " << argv[0] << " image-as-far A B C D tolerance\n";
      return 2;
    }
  const std::string mode = argv[1];
  const double tol = std::atof(argv[4]);
  if (mode == "proj")
    return compare_proj(argv[2], argv[3], tol);
  if (mode == "image")
    return compare_image(argv[2], argv[3], tol, false);
  if (mode == "image-max")
    return compare_image(argv[2], argv[3], tol, true);
  std::cerr << "unknown mode " << mode << "\n";
  return 2;
}
