// SPDX-License-Identifier: Apache-2.0
/*
  The LOR endpoints of every bin of a cylindrical scanner without arc correction (ProjDataInfoCylindricalNoArcCorr),
  made from two small tables of STIR's own values instead of ProjDataInfo::get_LOR per bin.

  A bin's LOR, as STIR's parallelproj pair takes it (get_LOR, then its intersections with the FOV cylinder), has its
  transaxial part from the view and tangential position only, and its axial part from the segment, axial and
  tangential position only: the endpoints are (x1, y1, z1 + (z2 - z1) l1) and (x2, y2, z1 + (z2 - z1) l2), where x, y
  and the line parameters l1, l2 of the intersections depend on (view, tangential position) and the LOR's end planes
  z1, z2 on (segment, axial position, tangential position). Both tables are filled with STIR's own code (get_LOR and
  get_intersections_with_cylinder on one bin per entry), so the endpoints are the very floats of the per-bin path when
  the arithmetic of the last step is the same: this file is compiled with STIR's -ffast-math, as StarprojGeometry.cxx.
*/
#ifndef STIR_STARPROJ_STARPROJCYLINDRICALLORS_H
#define STIR_STARPROJ_STARPROJCYLINDRICALLORS_H

#include "stir/common.h"

#include <cstdint>
#include <vector>

START_NAMESPACE_STIR

class ProjDataInfo;

//! Writes the endpoints of every bin of pdi (3 floats each, starproj's (z, y, x) order, multiplied by scale) into
//! xstart / xend, LOR index first_lor[(segment - min segment) * views + (view - min view)] + axial position offset *
//! tangential positions + tangential position offset; a LOR that misses the FOV cylinder gets both endpoints 0.
//! reversed: xstart at STIR's second point (TOF data). threads: OpenMP threads (0: OpenMP's default).
//! Returns false, writing nothing, when pdi is not exactly a ProjDataInfoCylindricalNoArcCorr or its views have
//! different ring radii (the per-bin path then applies).
bool starproj_cylindrical_lors(const ProjDataInfo& pdi,
                               float scale,
                               bool reversed,
                               const std::vector<int64_t>& first_lor,
                               float* xstart,
                               float* xend,
                               int threads);

END_NAMESPACE_STIR

#endif
