// SPDX-License-Identifier: Apache-2.0
/*
  The geometry of one set_up of the "Starproj" classes: the image description in starproj's conventions and the LOR
  set of the projection data (or of the scanner's bins), registered with starproj once, with one chunk per viewgram.
*/
#ifndef STIR_STARPROJ_STARPROJGEOMETRY_H
#define STIR_STARPROJ_STARPROJGEOMETRY_H

#include "stir/shared_ptr.h"
#include "stir_starproj/StarprojHostMemory.h"
#include "stir_starproj/StarprojRuntime.h"
#include "stir_starproj/StarprojSupported.h"

#include <starproj.h>

#include <cstdint>
#include <memory>
#include <vector>

START_NAMESPACE_STIR

class ProjDataInfo;
template <int num_dimensions, class elemT>
class DiscretisedDensity;

//! The image and LOR geometry of one set_up, registered with starproj once.
/*!
  Coordinates follow STIR's parallelproj pair, so that both pairs project the same: STIR's image index order (z,y,x)
  is starproj's [n0][n1][n2]; LOR endpoints are where STIR's LOR (ProjDataInfo::get_LOR) meets the scanner's FOV
  cylinder, in STIR's gantry-centred coordinates (z,y,x); the image origin is the centre of its first voxel in the
  same system; lengths are in units of the x voxel size (STIR projectors work in "pixel units").

  LORs are stored [view][segment][axial position][tangential position]: each viewgram is one range of the set and one
  chunk of the chunking (chunk index from chunk_of(), view by view: chunk order is the LORs' order), and each view,
  all its segments, one range too (view_chunks(): one chunk per view). A subset of views is then a few long runs of
  LORs, which reach a GPU in a few large copies. For TOF data the endpoints are swapped (xstart at
  STIR's second point), so that starproj's TOF bin b is STIR's timing position min_tof_pos_num + b.
*/
class StarprojGeometry
{
public:
  //! upload: copy every LOR to the GPUs now (projectors and sinogram objective functions, which project them at every
  //! call); a listmode objective function projects its sinogram's LORs once, for the sensitivities, and leaves it to
  //! those projections
  StarprojGeometry(const shared_ptr<const ProjDataInfo>& proj_data_info_sptr,
                   const DiscretisedDensity<3, float>& density_info,
                   const StarprojSettings& settings,
                   bool upload = true);
  ~StarprojGeometry();
  StarprojGeometry(const StarprojGeometry&) = delete;
  StarprojGeometry& operator=(const StarprojGeometry&) = delete;

  //! true when this geometry was made for the same projection data description and image characteristics
  bool matches(const ProjDataInfo& proj_data_info, const DiscretisedDensity<3, float>& density_info) const;

  //! the chunk of the viewgram (segment, view) in chunks(): (view - min view) * segments + (segment - min segment)
  int chunk_of(int segment_num, int view_num) const;
  //! the first LOR of a chunk of chunks()
  int64_t first_lor(int chunk) const
  {
    return _first_lor[std::size_t(chunk % _num_segments) * _num_views + chunk / _num_segments];
  }
  //! the first LOR of each viewgram, [segment - min segment][view - min view] (the readers' and writers' table)
  const std::vector<int64_t>& first_lors() const { return _first_lor; }
  //! index of the LOR of (segment, view, axial position, tangential position), which must be in the data
  int64_t lor_index(int segment_num, int view_num, int axial_pos_num, int tangential_pos_num) const
  {
    chunk_of(segment_num, view_num); // checks both
    return _first_lor[std::size_t(segment_num - _min_segment) * _num_views + (view_num - _min_view)]
           + int64_t(axial_pos_num - min_axial_pos_num(segment_num)) * _num_tang + (tangential_pos_num - _min_tang);
  }
  //! the endpoints of LOR lor (3 floats each, starproj's units and axis order)
  const float* lor_start(int64_t lor) const { return &_xstart[3 * lor]; }
  const float* lor_end(int64_t lor) const { return &_xend[3 * lor]; }
  int num_chunks() const { return static_cast<int>(_first_lor.size()); }
  int64_t num_lors() const { return _num_lors; }
  int min_axial_pos_num(int segment_num) const;
  int min_tangential_pos_num() const { return _min_tang; }
  int num_tangential_poss() const { return _num_tang; }

  //! the projection data's geometry (cylindrical with or without arc correction, blocks, generic)
  StarprojGeometryKind kind() const { return _kind; }

  bool is_tof() const { return _num_tof_bins > 1; }
  int num_tof_bins() const { return _num_tof_bins; }
  int min_tof_pos_num() const { return _min_tof_pos; }
  const sproj_tof* tof() const { return _tof; }

  //! rim (in voxels) truncated by "restrict to cylindrical FOV", as STIR's parallelproj pair computes it
  int rim_truncation() const { return _rim_truncation; }

  const int* dims() const { return _dims; }
  const float* voxel_size() const { return _voxel_size; }
  const float* origin() const { return _origin; }
  int64_t num_voxels() const { return int64_t(_dims[0]) * _dims[1] * _dims[2]; }
  sproj_lors* lors() const { return _lors; }
  sproj_chunks* chunks() const { return _chunks; }
  //! one chunk per view (view - min view): all its segments, one range of LORs
  sproj_chunks* view_chunks() const { return _view_chunks; }
  //! num_subsets interleaved subsets of views (subset k: views min + k, min + k + S, ...) as lists of view_chunks():
  //! subset 0's chunks, then subset 1's, ... in chunks, and each subset's count in sizes (sproj_recon_config's form)
  void subset_views(int num_subsets, std::vector<int>& chunks, std::vector<int>& sizes) const;
  const std::shared_ptr<StarprojRuntime>& runtime() const { return _runtime; }

private:
  std::shared_ptr<StarprojRuntime> _runtime; // declared first: destroyed last
  StarprojGeometryKind _kind = StarprojGeometryKind::cylindrical_no_arc_corr;
  shared_ptr<const ProjDataInfo> _proj_data_info_sptr;
  shared_ptr<const DiscretisedDensity<3, float>> _density_info_sptr;
  int _dims[3];
  float _voxel_size[3];
  float _origin[3];
  int _rim_truncation = 0;
  int _min_segment = 0, _max_segment = 0, _num_segments = 1, _min_view = 0, _num_views = 0, _min_tang = 0, _num_tang = 0;
  std::vector<int> _min_axial; // per segment (index segment - _min_segment)
  std::vector<int64_t> _first_lor; // [segment][view]
  int64_t _num_lors = 0;
  int _num_tof_bins = 1;
  int _min_tof_pos = 0;
  StarprojFloats _xstart, _xend; // written once, on all cores: not zeroed first
  sproj_lors* _lors = nullptr;
  sproj_chunks* _chunks = nullptr;
  sproj_chunks* _view_chunks = nullptr;
  sproj_tof* _tof = nullptr;
};

END_NAMESPACE_STIR

#endif
