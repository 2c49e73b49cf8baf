// SPDX-License-Identifier: Apache-2.0
// What the "Starproj" classes accept and the errors that name the rest (StarprojSupported.h).

#include "stir_starproj/StarprojSupported.h"

#include "stir/DiscretisedDensity.h"
#include "stir/ExamInfo.h"
#include "stir/ImagingModality.h"
#include "stir/ProjDataInfo.h"
#include "stir/ProjDataInfoBlocksOnCylindricalNoArcCorr.h"
#include "stir/ProjDataInfoCylindricalArcCorr.h"
#include "stir/ProjDataInfoCylindricalNoArcCorr.h"
#include "stir/ProjDataInfoGenericNoArcCorr.h"
#include "stir/Scanner.h"
#include "stir/VoxelsOnCartesianGrid.h"
#include "stir/error.h"

#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <typeinfo>
#if defined(__GNUG__)
#  include <cxxabi.h>
#endif

START_NAMESPACE_STIR

namespace
{
const char* const supported_geometries = "ProjDataInfoCylindricalNoArcCorr, ProjDataInfoCylindricalArcCorr, "
                                         "ProjDataInfoBlocksOnCylindricalNoArcCorr and ProjDataInfoGenericNoArcCorr";

// the class of an object as a reader knows it ("stir::" dropped), for the messages
template <class T>
std::string
class_name(const T& object)
{
  const char* raw = typeid(object).name();
  std::string name = raw;
#if defined(__GNUG__)
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> demangled(abi::__cxa_demangle(raw, nullptr, nullptr, &status), std::free);
  if (status == 0 && demangled)
    name = demangled.get();
#endif
  for (std::string::size_type at; (at = name.find("stir::")) != std::string::npos;)
    name.erase(at, 6);
  return name;
}

// SPECT's projection data in STIR are ProjDataInfoCylindricalArcCorr too: they tell themselves by views over a whole
// turn, orbits whose radius may change with the view, and a "scanner" without detectors (STIR's SPECT headers give -1
// detectors per ring); PET sinograms cover half a turn on a circle of detectors
void
check_pet_views(const ProjDataInfoCylindrical& pdi, const std::string& name)
{
  const double extent = std::fabs(double(pdi.get_azimuthal_angle_sampling())) * pdi.get_num_views();
  if (extent > _PI * (1 + 1e-3))
    error("Starproj: the projection data (" + name + ") have views over " + std::to_string(extent * 180 / _PI)
          + " degrees, as SPECT data have; Starproj projects PET data, whose views cover 180 degrees (" + supported_geometries
          + ")");
  const VectorWithOffset<float> radii = pdi.get_ring_radii_for_all_views();
  for (int v = radii.get_min_index(); v <= radii.get_max_index(); ++v)
    if (radii[v] != radii[radii.get_min_index()])
      error("Starproj: the projection data (" + name + ") have an orbit whose radius changes with the view (view "
            + std::to_string(v) + ": " + std::to_string(radii[v]) + " mm, view " + std::to_string(radii.get_min_index()) + ": "
            + std::to_string(radii[radii.get_min_index()])
            + " mm), as SPECT's non-circular orbits; Starproj projects PET data on a circular scanner or a detector map ("
            + supported_geometries + ")");
  if (pdi.get_scanner_sptr()->get_num_detectors_per_ring() <= 0)
    error("Starproj: the projection data (" + name + ") come from a scanner without detectors ("
          + std::to_string(pdi.get_scanner_sptr()->get_num_detectors_per_ring())
          + " per ring), as STIR's SPECT data do; Starproj projects PET data, whose LORs join two detectors ("
          + supported_geometries + ")");
}
} // namespace

const char*
starproj_geometry_kind_name(StarprojGeometryKind kind)
{
  switch (kind)
    {
    case StarprojGeometryKind::cylindrical_no_arc_corr:
      return "ProjDataInfoCylindricalNoArcCorr";
    case StarprojGeometryKind::cylindrical_arc_corr:
      return "ProjDataInfoCylindricalArcCorr";
    case StarprojGeometryKind::blocks_on_cylindrical:
      return "ProjDataInfoBlocksOnCylindricalNoArcCorr";
    case StarprojGeometryKind::generic:
      return "ProjDataInfoGenericNoArcCorr";
    }
  return "?";
}

StarprojGeometryKind
starproj_geometry_kind(const ProjDataInfo& pdi)
{
  const std::string name = class_name(pdi);
  StarprojGeometryKind kind = StarprojGeometryKind::cylindrical_no_arc_corr;
  // most derived first: the block class derives from the generic one, which derives from the cylindrical one
  if (dynamic_cast<const ProjDataInfoBlocksOnCylindricalNoArcCorr*>(&pdi))
    kind = StarprojGeometryKind::blocks_on_cylindrical;
  else if (dynamic_cast<const ProjDataInfoGenericNoArcCorr*>(&pdi))
    kind = StarprojGeometryKind::generic;
  else if (dynamic_cast<const ProjDataInfoCylindricalNoArcCorr*>(&pdi))
    kind = StarprojGeometryKind::cylindrical_no_arc_corr;
  else if (dynamic_cast<const ProjDataInfoCylindricalArcCorr*>(&pdi))
    kind = StarprojGeometryKind::cylindrical_arc_corr;
  else
    error("Starproj: the projection data are " + name + ", which Starproj does not project; supported: " + supported_geometries);
  check_pet_views(dynamic_cast<const ProjDataInfoCylindrical&>(pdi), name);
  if (pdi.is_tof_data() && (kind == StarprojGeometryKind::blocks_on_cylindrical || kind == StarprojGeometryKind::generic))
    error("Starproj: the projection data are " + name + " with " + std::to_string(pdi.get_num_tof_poss())
          + " TOF positions; STIR has no TOF for its block and generic geometries (their get_bin refuses it, their "
          + "Interfile headers and constructors make no TOF data): TOF is supported with ProjDataInfoCylindricalNoArcCorr "
          + "and ProjDataInfoCylindricalArcCorr");
  return kind;
}

void
starproj_check_image(const DiscretisedDensity<3, float>& image)
{
  const auto* voxels = dynamic_cast<const VoxelsOnCartesianGrid<float>*>(&image);
  if (!voxels)
    error("Starproj: the image is a " + class_name(image)
          + "; supported: VoxelsOnCartesianGrid<float> (voxels on a Cartesian grid) with a regular index range");
  BasicCoordinate<3, int> min_index, max_index;
  if (!image.get_regular_range(min_index, max_index))
    error("Starproj: the image (VoxelsOnCartesianGrid<float>) has an irregular index range (planes or rows of "
          "different extents); supported: VoxelsOnCartesianGrid<float> with a regular index range, one box of voxels");
}

void
starproj_check_modality(const ExamInfo& exam_info, const std::string& what)
{
  const ImagingModality& modality = exam_info.imaging_modality;
  if (modality.get_modality() == ImagingModality::PT || modality.get_modality() == ImagingModality::Unknown)
    return;
  error("Starproj: " + what + " has imaging modality " + modality.get_name()
        + (modality.get_modality() == ImagingModality::NM ? " (SPECT)" : "")
        + "; Starproj projects PET data (imaging modality PT, or none stated)");
}

StarprojGeometryKind
starproj_check_supported(const ProjDataInfo& proj_data_info, const DiscretisedDensity<3, float>& image)
{
  const StarprojGeometryKind kind = starproj_geometry_kind(proj_data_info);
  starproj_check_image(image);
  starproj_check_modality(image.get_exam_info(), "the image");
  return kind;
}

END_NAMESPACE_STIR
