// SPDX-License-Identifier: Apache-2.0
// The image and LOR geometry of one set_up, registered with starproj once (StarprojGeometry.h). Compiled with STIR's
// -ffast-math (stir/CMakeLists.txt), so that the LOR endpoints are the floats STIR's parallelproj pair computes.

#include "stir_starproj/StarprojGeometry.h"
#include "stir_starproj/StarprojCylindricalLORs.h"

#include "stir/Bin.h"
#include "stir/DiscretisedDensity.h"
#include "stir/LORCoordinates.h"
#include "stir/ProjDataInfo.h"
#include "stir/Scanner.h"
#include "stir/TOF_conversions.h"
#include "stir/VoxelsOnCartesianGrid.h"
#include "stir/error.h"
#include "stir/info.h"
#include "stir/warning.h"
#include "stir_starproj/StarprojSupported.h"

#include <algorithm>
#include <cmath>
#ifdef _OPENMP
#  include <omp.h>
#endif
#include <string>

START_NAMESPACE_STIR

namespace
{
// x voxel size: STIR's projectors give line integrals in units of it
float
length_unit(const VoxelsOnCartesianGrid<float>& image)
{
  return image.get_voxel_size()[3];
}
} // namespace

StarprojGeometry::StarprojGeometry(const shared_ptr<const ProjDataInfo>& proj_data_info_sptr,
                                   const DiscretisedDensity<3, float>& density_info,
                                   const StarprojSettings& settings,
                                   bool upload)
    : _proj_data_info_sptr(proj_data_info_sptr->create_shared_clone()),
      _density_info_sptr(density_info.get_empty_copy())
{
  const ProjDataInfo& pdi = *_proj_data_info_sptr;
  // the geometries whose LORs get_LOR gives as STIR's parallelproj pair takes them, a regular voxel grid, PET
  // (StarprojSupported.h); anything else stops here with a message naming it
  _kind = starproj_check_supported(pdi, density_info);
  const auto* image = dynamic_cast<const VoxelsOnCartesianGrid<float>*>(&density_info);
  _runtime = StarprojRuntime::acquire(settings);

  // image: STIR's (z,y,x) order is starproj's (n0,n1,n2); lengths in x-voxel units
  const float unit = length_unit(*image);
  const float scale = 1.F / unit;
  const auto lengths = image->get_lengths();
  const auto voxel_size = image->get_voxel_size();
  BasicCoordinate<3, int> min_index, max_index;
  if (!image->get_regular_range(min_index, max_index))
    error("Starproj: the image must have a regular index range");
  // centre of the first voxel, moved from STIR's image coordinates (z = 0 at the first plane) to the gantry-centred
  // coordinates of ProjDataInfo::get_LOR (z = 0 half-way between the first and last planes)
  auto first_centre = image->get_physical_coordinates_for_indices(min_index);
  first_centre[1] -= (image->get_min_index() + image->get_max_index()) / 2.F * voxel_size[1];
  for (int d = 0; d < 3; ++d)
    {
      _dims[d] = lengths[d + 1];
      _voxel_size[d] = voxel_size[d + 1] * scale;
      _origin[d] = first_centre[d + 1] * scale;
    }
  // as STIR's parallelproj pair: the image half-width in x-voxel units against the inner radius in mm (so in
  // practice no extra rim: the inscribed circle of the image is kept)
  {
    const float inner_radius = pdi.get_scanner_sptr()->get_inner_ring_radius();
    const float half_width = _voxel_size[2] * _dims[2] / 2;
    _rim_truncation = static_cast<int>(std::max((half_width - inner_radius) / _voxel_size[2], 0.F));
  }

  // LORs [view][segment][axial][tangential]: a viewgram per chunk, chunks view by view (chunk_of), so that a view's
  // segments follow each other and a subset of views is a few long runs (the LOR table _first_lor stays
  // [segment][view], as the readers take it)
  _min_segment = pdi.get_min_segment_num();
  _max_segment = pdi.get_max_segment_num();
  _num_segments = _max_segment - _min_segment + 1;
  _min_view = pdi.get_min_view_num();
  _num_views = pdi.get_num_views();
  _min_tang = pdi.get_min_tangential_pos_num();
  _num_tang = pdi.get_num_tangential_poss();
  _num_tof_bins = pdi.get_num_tof_poss();
  _min_tof_pos = pdi.get_min_tof_pos_num();
  const bool tof = _num_tof_bins > 1;
  for (int seg = _min_segment; seg <= _max_segment; ++seg)
    _min_axial.push_back(pdi.get_min_axial_pos_num(seg));
  _first_lor.assign(std::size_t(_num_segments) * _num_views, 0);
  const int num_chunks = _num_segments * _num_views;
  std::vector<int64_t> chunk_first(num_chunks), counts(num_chunks), view_first(_num_views), view_counts(_num_views);
  for (int v = 0; v < _num_views; ++v)
    {
      view_first[v] = _num_lors;
      for (int s = 0; s < _num_segments; ++s)
        {
          const int64_t per_view = int64_t(pdi.get_num_axial_poss(_min_segment + s)) * _num_tang;
          const int c = v * _num_segments + s;
          _first_lor[std::size_t(s) * _num_views + v] = chunk_first[c] = _num_lors;
          counts[c] = per_view;
          _num_lors += per_view;
        }
      view_counts[v] = _num_lors - view_first[v];
    }
  // not zeroed here: every endpoint is written below, on the host's cores (zeros for LORs that miss the FOV)
  _xstart.resize(3 * _num_lors);
  _xend.resize(3 * _num_lors);
  const float fov_radius = pdi.get_scanner_sptr()->get_max_FOV_radius();
  // the closed form where STIR's geometry allows it (StarprojCylindricalLORs.h: the same floats); else get_LOR per bin
  const int threads = starproj_host_threads();
  const bool closed_form = starproj_cylindrical_lors(pdi, scale, tof, _first_lor, _xstart.data(), _xend.data(), threads);
  const int per_bin_chunks = closed_form ? 0 : num_chunks; // (here: viewgrams in the table's order)
#ifdef _OPENMP
#  pragma omp parallel for schedule(dynamic) num_threads(threads > 0 ? threads : omp_get_max_threads())
#endif
  for (int c = 0; c < per_bin_chunks; ++c)
    {
      const int seg = _min_segment + c / _num_views;
      const int view = _min_view + c % _num_views;
      const int num_axial = pdi.get_num_axial_poss(seg);
      int64_t lor = _first_lor[c];
      for (int a = 0; a < num_axial; ++a)
        for (int t = 0; t < _num_tang; ++t, ++lor)
          {
            const Bin bin(seg, view, _min_axial[seg - _min_segment] + a, _min_tang + t);
            LORInAxialAndNoArcCorrSinogramCoordinates<float> sino_lor;
            pdi.get_LOR(sino_lor, bin);
            LORAs2Points<float> points;
            float* s = &_xstart[3 * lor];
            float* e = &_xend[3 * lor];
            // a LOR that misses the FOV has length 0 and projects to 0
            if (sino_lor.get_intersections_with_cylinder(points, fov_radius) != Succeeded::yes)
              {
                std::fill(s, s + 3, 0.F);
                std::fill(e, e + 3, 0.F);
                continue;
              }
            const CartesianCoordinate3D<float>& first = tof ? points.p2() : points.p1();
            const CartesianCoordinate3D<float>& second = tof ? points.p1() : points.p2();
            for (int d = 0; d < 3; ++d)
              {
                s[d] = first[d + 1] * scale;
                e[d] = second[d + 1] * scale;
              }
          }
    }
  starproj_check(sproj_lors_register(&_lors, _xstart.data(), _xend.data(), _num_lors), "sproj_lors_register");
  int status = sproj_chunks_create_ranges(&_chunks, _lors, num_chunks, chunk_first.data(), counts.data());
  if (status == SPROJ_OK)
    {
      status = sproj_chunks_create_ranges(&_view_chunks, _lors, _num_views, view_first.data(), view_counts.data());
      if (status != SPROJ_OK)
        {
          sproj_chunks_destroy(_chunks);
          _chunks = nullptr;
        }
    }
  if (status != SPROJ_OK)
    {
      sproj_lors_unregister(_lors);
      _lors = nullptr;
      starproj_check(status, "sproj_chunks_create_ranges");
    }
  if (tof)
    {
      sproj_tof_params par;
      const Bin bin(0, 0, 0, 0, 0);
      par.bin_width = pdi.get_sampling_in_k(bin) * scale;
      par.num_bins = _num_tof_bins;
      par.num_sigmas = 4.F; // STIR's parallelproj pair uses 4 sigmas
      par.sigma = static_cast<float>(tof_delta_time_to_mm(pdi.get_scanner_sptr()->get_timing_resolution()) / 2.355) * scale;
      par.center_offset = 0.F;
      const int tof_status = sproj_tof_register(&_tof, &par, nullptr, nullptr, nullptr);
      if (tof_status != SPROJ_OK)
        {
          sproj_chunks_destroy(_view_chunks);
          sproj_chunks_destroy(_chunks);
          sproj_lors_unregister(_lors);
          _view_chunks = nullptr;
          _chunks = nullptr;
          _lors = nullptr;
          starproj_check(tof_status, "sproj_tof_register");
        }
    }
  if (upload)
    starproj_check(sproj_lors_upload(_lors, _chunks, SPROJ_ALL_CHUNKS, SPROJ_ALL_GPUS), "sproj_lors_upload");
  if (settings.verbosity > 1)
    info("Starproj: registered " + std::to_string(_num_lors) + " LORs in " + std::to_string(num_chunks)
         + " viewgrams, image " + std::to_string(_dims[0]) + "x" + std::to_string(_dims[1]) + "x" + std::to_string(_dims[2])
         + (tof ? ", " + std::to_string(_num_tof_bins) + " TOF bins" : std::string())
         + (closed_form ? " (closed form)" : " (get_LOR per bin)"));
}

StarprojGeometry::~StarprojGeometry()
{
  if (_tof)
    sproj_tof_unregister(_tof);
  if (_view_chunks)
    sproj_chunks_destroy(_view_chunks);
  if (_chunks)
    sproj_chunks_destroy(_chunks);
  if (_lors && sproj_lors_unregister(_lors) != SPROJ_OK)
    warning(std::string("Starproj: sproj_lors_unregister failed: ") + sproj_last_error());
}

bool
StarprojGeometry::matches(const ProjDataInfo& proj_data_info, const DiscretisedDensity<3, float>& density_info) const
{
  return *_proj_data_info_sptr == proj_data_info && _density_info_sptr->has_same_characteristics(density_info);
}

int
StarprojGeometry::chunk_of(int segment_num, int view_num) const
{
  if (segment_num < _min_segment || segment_num > _max_segment || view_num < _min_view || view_num >= _min_view + _num_views)
    error("Starproj: segment " + std::to_string(segment_num) + ", view " + std::to_string(view_num)
          + " is not in the projection data the projector was set up with");
  return (view_num - _min_view) * _num_segments + (segment_num - _min_segment);
}

void
StarprojGeometry::subset_views(int num_subsets, std::vector<int>& chunks, std::vector<int>& sizes) const
{
  chunks.clear();
  sizes.clear();
  for (int k = 0; k < num_subsets; ++k)
    {
      int size = 0;
      for (int v = k; v < _num_views; v += num_subsets, ++size)
        chunks.push_back(v);
      sizes.push_back(size);
    }
}

int
StarprojGeometry::min_axial_pos_num(int segment_num) const
{
  return _min_axial[segment_num - _min_segment];
}

END_NAMESPACE_STIR
