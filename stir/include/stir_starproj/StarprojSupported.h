// SPDX-License-Identifier: Apache-2.0
/*
  What the "Starproj" classes accept, checked at set_up: STIR's PET projection-data geometries whose LORs come from
  ProjDataInfo::get_LOR as STIR's parallelproj pair takes them, and images on a regular Cartesian grid. Everything else
  stops set_up with an error that names what was given and what is supported.
*/
#ifndef STIR_STARPROJ_STARPROJSUPPORTED_H
#define STIR_STARPROJ_STARPROJSUPPORTED_H

#include "stir/common.h"

#include <string>

START_NAMESPACE_STIR

class ExamInfo;
class ProjDataInfo;
template <int num_dimensions, class elemT>
class DiscretisedDensity;

//! The projection-data geometries the Starproj classes project. STIR 6.5's block and generic classes derive from
//! ProjDataInfoCylindricalNoArcCorr, so code that treats a cylinder in closed form must ask for the kind, not
//! dynamic_cast to that class.
enum class StarprojGeometryKind
{
  cylindrical_no_arc_corr, //!< ProjDataInfoCylindricalNoArcCorr itself
  cylindrical_arc_corr,    //!< ProjDataInfoCylindricalArcCorr
  blocks_on_cylindrical,   //!< ProjDataInfoBlocksOnCylindricalNoArcCorr (detector positions from the block layout)
  generic                  //!< ProjDataInfoGenericNoArcCorr (detector positions from a crystal map)
};

//! the kind of proj_data_info; error() (naming its class and the supported ones) for any other ProjDataInfo, TOF
//! data of the block and generic geometries (STIR 6.5 has no TOF for them), and SPECT-like data: views over more
//! than half a turn, an orbit whose radius changes from view to view, or a scanner without detectors
StarprojGeometryKind starproj_geometry_kind(const ProjDataInfo& proj_data_info);

//! STIR's class name of the kind, e.g. "ProjDataInfoBlocksOnCylindricalNoArcCorr"
const char* starproj_geometry_kind_name(StarprojGeometryKind kind);

//! error() unless the image is a VoxelsOnCartesianGrid<float> with a regular index range (naming its class otherwise)
void starproj_check_image(const DiscretisedDensity<3, float>& image);

//! error() unless the exam is PET or of no stated modality (SPECT, i.e. nucmed, and the others named); `what` says
//! whose exam it is ("the projection data", "the image")
void starproj_check_modality(const ExamInfo& exam_info, const std::string& what);

//! all three for a set_up: the geometry, the image and the image's modality
StarprojGeometryKind starproj_check_supported(const ProjDataInfo& proj_data_info, const DiscretisedDensity<3, float>& image);

END_NAMESPACE_STIR

#endif
