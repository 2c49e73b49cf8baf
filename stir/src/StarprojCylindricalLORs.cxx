// SPDX-License-Identifier: Apache-2.0
// The LORs of a cylindrical scanner without arc correction from per-(view, tangential) and per-(segment, axial,
// tangential) tables of STIR's own values (StarprojCylindricalLORs.h). Compiled with STIR's -ffast-math
// (stir/CMakeLists.txt), as the per-bin path of StarprojGeometry.cxx, so that both give the same floats.

#include "stir_starproj/StarprojCylindricalLORs.h"
#include "stir_starproj/StarprojRuntime.h"

#include "stir/Bin.h"
#include "stir/LORCoordinates.h"
#include "stir/ProjDataInfoCylindricalNoArcCorr.h"
#include "stir/Scanner.h"

#include <typeinfo>

START_NAMESPACE_STIR

namespace
{
//! where the LORs of one (view, tangential position) meet the FOV cylinder: transaxial coordinates of both points and
//! their line parameters l1, l2 along the LOR from its first end plane (0) to its second (1)
struct Transaxial
{
  float x1, y1, x2, y2, l1, l2;
  bool hit;
};
//! the two end planes of the LORs of one (segment, axial position, tangential position), in STIR's order (z1 at the
//! LOR's first point)
struct Axial
{
  float z1, z2;
};
} // namespace

bool
starproj_cylindrical_lors(const ProjDataInfo& pdi,
                          const float scale,
                          const bool reversed,
                          const std::vector<int64_t>& first_lor,
                          float* const xstart,
                          float* const xend,
                          const int threads)
{
  // exactly this class: a subclass may give its bins other LORs
  if (typeid(pdi) != typeid(ProjDataInfoCylindricalNoArcCorr))
    return false;
  const auto& cyl = static_cast<const ProjDataInfoCylindricalNoArcCorr&>(pdi);
  // the axial table holds for every view only when every view has the same ring radius
  const VectorWithOffset<float> radii = cyl.get_ring_radii_for_all_views();
  for (const float r : radii)
    if (r != *radii.begin())
      return false;

  const int min_segment = pdi.get_min_segment_num(), max_segment = pdi.get_max_segment_num();
  const int min_view = pdi.get_min_view_num(), num_views = pdi.get_num_views();
  const int min_tang = pdi.get_min_tangential_pos_num(), num_tang = pdi.get_num_tangential_poss();
  const int num_segments = max_segment - min_segment + 1;
  if (first_lor.size() != static_cast<std::size_t>(num_segments) * num_views)
    return false;
  const double fov_radius = pdi.get_scanner_sptr()->get_max_FOV_radius();
  const int num_threads = starproj_threads_or_default(threads);

  // where each segment's rows of the axial table begin
  std::vector<int64_t> axial_first(num_segments + 1, 0);
  for (int s = 0; s < num_segments; ++s)
    axial_first[s + 1] = axial_first[s] + int64_t(pdi.get_num_axial_poss(min_segment + s)) * num_tang;
  std::vector<Transaxial> transaxial(static_cast<std::size_t>(num_views) * num_tang);
  std::vector<Axial> axial(static_cast<std::size_t>(axial_first[num_segments]));

  // the transaxial table: one bin per (view, tangential position), its LOR's end planes set to 0 and 1 at its first
  // and second point, so that the intersections' z are the line parameters STIR's intersection computes
  const int ref_segment = min_segment <= 0 && max_segment >= 0 ? 0 : min_segment;
  const int ref_axial = pdi.get_min_axial_pos_num(ref_segment);
#ifdef _OPENMP
#  pragma omp parallel for schedule(static) num_threads(num_threads)
#endif
  for (int v = 0; v < num_views; ++v)
    for (int t = 0; t < num_tang; ++t)
      {
        LORInAxialAndNoArcCorrSinogramCoordinates<float> lor;
        pdi.get_LOR(lor, Bin(ref_segment, min_view + v, ref_axial, min_tang + t));
        // get_LOR's constructor stores the end planes swapped (is_swapped()) where it turns the view angle by pi;
        // the first point keeps get_LOR's first end plane either way
        lor.z1() = lor.is_swapped() ? 1.F : 0.F;
        lor.z2() = lor.is_swapped() ? 0.F : 1.F;
        LORAs2Points<float> points;
        Transaxial& e = transaxial[static_cast<std::size_t>(v) * num_tang + t];
        e.hit = lor.get_intersections_with_cylinder(points, fov_radius) == Succeeded::yes;
        e.x1 = points.p1().x();
        e.y1 = points.p1().y();
        e.l1 = points.p1().z();
        e.x2 = points.p2().x();
        e.y2 = points.p2().y();
        e.l2 = points.p2().z();
      }
  // the axial table: one bin per (segment, axial position, tangential position), the end planes get_LOR gives it (in
  // its order before any swap), which no view changes when all views have one ring radius
#ifdef _OPENMP
#  pragma omp parallel for schedule(dynamic) num_threads(num_threads)
#endif
  for (int s = 0; s < num_segments; ++s)
    {
      const int seg = min_segment + s, min_axial = pdi.get_min_axial_pos_num(seg);
      for (int a = 0; a < pdi.get_num_axial_poss(seg); ++a)
        for (int t = 0; t < num_tang; ++t)
          {
            LORInAxialAndNoArcCorrSinogramCoordinates<float> lor;
            pdi.get_LOR(lor, Bin(seg, min_view, min_axial + a, min_tang + t));
            Axial& e = axial[axial_first[s] + int64_t(a) * num_tang + t];
            e.z1 = lor.is_swapped() ? lor.z2() : lor.z1();
            e.z2 = lor.is_swapped() ? lor.z1() : lor.z2();
          }
    }

  // every LOR, as find_LOR_intersections_with_cylinder writes its points: d * l + c1 with d = c2 - c1 (the transaxial
  // coordinates of c1 + d l are the table's), then each coordinate times scale in starproj's (z, y, x) order
  const int num_chunks = num_segments * num_views;
#ifdef _OPENMP
#  pragma omp parallel for schedule(dynamic) num_threads(num_threads)
#endif
  for (int c = 0; c < num_chunks; ++c)
    {
      const int s = c / num_views, v = c % num_views;
      const int num_axial = pdi.get_num_axial_poss(min_segment + s);
      const Transaxial* row = &transaxial[static_cast<std::size_t>(v) * num_tang];
      int64_t lor = first_lor[c];
      for (int a = 0; a < num_axial; ++a)
        {
          const Axial* planes = &axial[axial_first[s] + int64_t(a) * num_tang];
          for (int t = 0; t < num_tang; ++t, ++lor)
            {
              float* const out_s = xstart + 3 * lor;
              float* const out_e = xend + 3 * lor;
              const Transaxial& e = row[t];
              if (!e.hit)
                {
                  for (int d = 0; d < 3; ++d)
                    out_s[d] = out_e[d] = 0.F;
                  continue;
                }
              const float dz = planes[t].z2 - planes[t].z1;
              const float z1 = dz * e.l1 + planes[t].z1;
              const float z2 = dz * e.l2 + planes[t].z1;
              float* const first = reversed ? out_e : out_s;
              float* const second = reversed ? out_s : out_e;
              first[0] = z1 * scale;
              first[1] = e.y1 * scale;
              first[2] = e.x1 * scale;
              second[0] = z2 * scale;
              second[1] = e.y2 * scale;
              second[2] = e.x2 * scale;
            }
        }
    }
  return true;
}

END_NAMESPACE_STIR
