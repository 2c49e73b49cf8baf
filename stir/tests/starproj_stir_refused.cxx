// SPDX-License-Identifier: Apache-2.0
// Test helper: what the "Starproj" classes do not project is refused at set_up, with a message that names it: SPECT
// data, images that are not VoxelsOnCartesianGrid or whose index range is irregular, a ProjDataInfo class other than
// the four supported, TOF on the block geometry, an image of another modality; for the pair, each projector alone and
// both objective functions where the case reaches them. Prints one line per case; exits 1 when a case is not refused
// or its message lacks what it must name.
//
// usage: starproj_stir_refused SPECT.hs SPECT_NONCIRCULAR.hs SPECT_HALF.hs PET.hs BLOCKS.hs LISTMODE.hdr IMAGE.hv
//   SPECT.hs: SPECT projection data (STIR's recon_test_pack/SPECT_test_Interfile_header.hs: views over 360 degrees),
//   SPECT_NONCIRCULAR.hs: the same over 180 degrees on a non-circular orbit, SPECT_HALF.hs: over 180 degrees on a
//   circle; PET.hs: cylindrical PET data, BLOCKS.hs: data of a block scanner, LISTMODE.hdr: listmode data STIR reads,
//   IMAGE.hv: an image for PET.hs

#include "stir/DiscretisedDensityOnCartesianGrid.h"
#include "stir/ExamInfo.h"
#include "stir/ImagingModality.h"
#include "stir/IndexRange.h"
#include "stir/ProjData.h"
#include "stir/ProjDataInfoBlocksOnCylindricalNoArcCorr.h"
#include "stir/ProjDataInfoSubsetByView.h"
#include "stir/Scanner.h"
#include "stir/Succeeded.h"
#include "stir/TextWriter.h"
#include "stir/VoxelsOnCartesianGrid.h"
#include "stir/IO/read_from_file.h"
#include "stir/listmode/ListModeData.h"
#include "stir_starproj/BackProjectorByBinStarproj.h"
#include "stir_starproj/ForwardProjectorByBinStarproj.h"
#include "stir_starproj/PoissonLogLikelihoodWithLinearModelForMeanAndListModeDataStarproj.h"
#include "stir_starproj/PoissonLogLikelihoodWithLinearModelForMeanAndProjDataStarproj.h"
#include "stir_starproj/ProjectorByBinPairUsingStarproj.h"

#include <cstdio>
#include <exception>
#include <functional>
#include <initializer_list>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

using namespace stir;
typedef DiscretisedDensity<3, float> Image;

namespace
{
// an image class of a user's own: a Cartesian grid that is not STIR's VoxelsOnCartesianGrid
class UsersOwnGrid : public DiscretisedDensityOnCartesianGrid<3, float>
{
public:
  UsersOwnGrid(const IndexRange<3>& range, const CartesianCoordinate3D<float>& origin, const BasicCoordinate<3, float>& spacing)
      : DiscretisedDensityOnCartesianGrid<3, float>(range, origin, spacing)
  {}
  DiscretisedDensity<3, float>* get_empty_copy() const override
  {
    return new UsersOwnGrid(this->get_index_range(), this->get_origin(), this->get_grid_spacing());
  }
  DiscretisedDensity<3, float>* clone() const override { return new UsersOwnGrid(*this); }
};

// STIR's warnings, kept to be read (the listmode objective function reports a failed set_up as a warning); its
// errors, which repeat the exceptions' messages, kept apart
std::ostringstream captured, errors;

int failures = 0, cases = 0;

// runs set_up; it must throw or return Succeeded::no, and the message (exception and captured warnings) must hold
// every fragment
void
expect_refused(const std::string& name, std::initializer_list<const char*> fragments, const std::function<Succeeded()>& set_up)
{
  ++cases;
  captured.str("");
  std::string message;
  bool refused = false;
  try
    {
      refused = set_up() != Succeeded::yes;
    }
  catch (const std::exception& e)
    {
      refused = true;
      message = e.what();
    }
  message += captured.str();
  std::string missing;
  for (const char* f : fragments)
    if (message.find(f) == std::string::npos)
      missing += std::string(missing.empty() ? "" : ", ") + "'" + f + "'";
  std::string shown = message;
  for (char& c : shown)
    if (c == '\n')
      c = ' ';
  if (!refused)
    std::printf("NOT REFUSED %s\n", name.c_str());
  else if (!missing.empty())
    std::printf("REFUSED WITHOUT NAMING %s: %s missing from: %s\n", name.c_str(), missing.c_str(), shown.c_str());
  else
    std::printf("refused %s:%s\n", name.c_str(), shown.c_str());
  if (!refused || !missing.empty())
    ++failures;
}

// the pair, the forward projector and the back projector, each set up alone
void
expect_projectors_refuse(const std::string& what,
                         std::initializer_list<const char*> fragments,
                         const shared_ptr<const ProjDataInfo>& pdi,
                         const shared_ptr<const Image>& image)
{
  expect_refused("pair: " + what, fragments, [&] {
    ProjectorByBinPairUsingStarproj pair;
    return pair.set_up(pdi, image);
  });
  expect_refused("forward projector: " + what, fragments, [&] {
    ForwardProjectorByBinStarproj fwd;
    fwd.settings().devices = "cpu";
    fwd.set_up(pdi, image);
    return Succeeded::yes;
  });
  expect_refused("back projector: " + what, fragments, [&] {
    BackProjectorByBinStarproj back;
    back.settings().devices = "cpu";
    back.set_up(pdi, image);
    return Succeeded::yes;
  });
}

Succeeded
set_up_sinogram_objective(const shared_ptr<ProjData>& data, const Image& image)
{
  PoissonLogLikelihoodWithLinearModelForMeanAndProjDataStarproj f;
  f.starproj_settings().devices = "cpu";
  f.set_proj_data_sptr(data);
  f.set_num_subsets(1);
  f.set_recompute_sensitivity(true);
  return f.set_up(shared_ptr<Image>(image.clone()));
}

Succeeded
set_up_listmode_objective(const shared_ptr<ListModeData>& lm, const Image& image)
{
  PoissonLogLikelihoodWithLinearModelForMeanAndListModeDataStarproj f;
  f.starproj_settings().devices = "cpu";
  f.set_input_data(lm);
  f.set_max_segment_num_to_process(0);
  f.set_num_subsets(1);
  f.set_recompute_sensitivity(true);
  return f.set_up(shared_ptr<Image>(image.clone()));
}
} // namespace

int
main(int argc, char** argv)
{
  if (argc != 8)
    {
      std::fprintf(
          stderr, "usage: %s SPECT.hs SPECT_NONCIRCULAR.hs SPECT_HALF.hs PET.hs BLOCKS.hs LISTMODE.hdr IMAGE.hv\n", argv[0]);
      return 2;
    }
  TextWriter warning_writer(&captured), error_writer(&errors);
  TextWriterHandle handle;
  handle.set_warning_channel(&warning_writer);
  handle.set_error_channel(&error_writer);
  try
    {
      shared_ptr<ProjData> spect = ProjData::read_from_file(argv[1]);
      shared_ptr<ProjData> spect_noncircular = ProjData::read_from_file(argv[2]);
      shared_ptr<ProjData> spect_half = ProjData::read_from_file(argv[3]);
      shared_ptr<ProjData> pet = ProjData::read_from_file(argv[4]);
      shared_ptr<ProjData> blocks = ProjData::read_from_file(argv[5]);
      shared_ptr<ListModeData> lm = read_from_file<ListModeData>(argv[6]);
      shared_ptr<Image> image(read_from_file<Image>(argv[7]));
      auto* voxels = dynamic_cast<VoxelsOnCartesianGrid<float>*>(image.get());
      if (!voxels)
        {
          std::fprintf(stderr, "starproj_stir_refused: %s is not a VoxelsOnCartesianGrid\n", argv[7]);
          return 2;
        }
      const shared_ptr<const ProjDataInfo> pet_pdi = pet->get_proj_data_info_sptr();

      // an image whose exam says SPECT
      shared_ptr<Image> nm_image(image->clone());
      {
        ExamInfo nm(image->get_exam_info());
        nm.imaging_modality = ImagingModality(ImagingModality::NM);
        nm_image->set_exam_info(nm);
      }

      // SPECT data (STIR describes them as ProjDataInfoCylindricalArcCorr, views over a whole turn); the objective
      // function with an image of the same modality (STIR's set_up refuses images of another modality than the data)
      expect_projectors_refuse(
          "SPECT data", { "ProjDataInfoCylindricalArcCorr", "SPECT", "360" }, spect->get_proj_data_info_sptr(), image);
      expect_refused("sinogram objective function: SPECT data", { "NM", "SPECT", "PET" }, [&] {
        return set_up_sinogram_objective(spect, *nm_image);
      });
      // the two other ways SPECT data show, each alone: a non-circular orbit, and a scanner without detectors (views
      // over 180 degrees on a circle, which only the latter tells from PET), with a PET image
      expect_projectors_refuse("SPECT data on a non-circular orbit",
                               { "ProjDataInfoCylindricalArcCorr", "orbit", "SPECT" },
                               spect_noncircular->get_proj_data_info_sptr(),
                               image);
      expect_projectors_refuse("SPECT data over 180 degrees",
                               { "ProjDataInfoCylindricalArcCorr", "without detectors", "SPECT" },
                               spect_half->get_proj_data_info_sptr(),
                               image);

      // an image of a class of its own, and a VoxelsOnCartesianGrid whose rows differ in length
      const shared_ptr<const Image> own(
          new UsersOwnGrid(image->get_index_range(), image->get_origin(), voxels->get_grid_spacing()));
      expect_projectors_refuse(
          "an image that is not a VoxelsOnCartesianGrid", { "UsersOwnGrid", "VoxelsOnCartesianGrid" }, pet_pdi, own);
      IndexRange<3> irregular_range = image->get_index_range();
      {
        IndexRange<2> plane = irregular_range[irregular_range.get_min_index()];
        plane[plane.get_min_index()]
            = IndexRange<1>(plane[plane.get_min_index()].get_min_index() + 1, plane[plane.get_min_index()].get_max_index());
        irregular_range[irregular_range.get_min_index()] = plane;
      }
      const shared_ptr<const Image> irregular(
          new VoxelsOnCartesianGrid<float>(irregular_range, image->get_origin(), voxels->get_grid_spacing()));
      expect_projectors_refuse(
          "a VoxelsOnCartesianGrid with an irregular index range", { "irregular index range" }, pet_pdi, irregular);
      expect_refused("sinogram objective function: an image that is not a VoxelsOnCartesianGrid",
                     { "UsersOwnGrid", "VoxelsOnCartesianGrid" },
                     [&] { return set_up_sinogram_objective(pet, *own); });
      expect_refused("listmode objective function: an image that is not a VoxelsOnCartesianGrid",
                     { "UsersOwnGrid", "VoxelsOnCartesianGrid" },
                     [&] { return set_up_listmode_objective(lm, *own); });
      expect_refused("listmode objective function: an irregular index range", { "irregular index range" }, [&] {
        return set_up_listmode_objective(lm, *irregular);
      });

      // the SPECT image with PET data
      expect_projectors_refuse("an image of modality NM", { "NM", "SPECT", "PET" }, pet_pdi, nm_image);

      // a ProjDataInfo of a class Starproj does not project (STIR's view subsets of another ProjDataInfo)
      {
        std::vector<int> views;
        for (int v = pet_pdi->get_min_view_num(); v <= pet_pdi->get_max_view_num(); v += 4)
          views.push_back(v);
        const shared_ptr<const ProjDataInfo> subset(new ProjDataInfoSubsetByView(pet_pdi, views));
        expect_projectors_refuse(
            "ProjDataInfoSubsetByView", { "ProjDataInfoSubsetByView", "ProjDataInfoGenericNoArcCorr" }, subset, image);
      }

      // TOF on the block geometry: STIR makes none (its Interfile reader and constructors), but a program could set
      // a TOF mashing factor on data of a TOF-ready block scanner
      {
        const auto& b = dynamic_cast<const ProjDataInfoBlocksOnCylindricalNoArcCorr&>(*blocks->get_proj_data_info_sptr());
        auto scanner = std::make_shared<Scanner>(*b.get_scanner_sptr());
        scanner->set_max_num_timing_poss(5);
        scanner->set_size_of_timing_poss(820.F);
        scanner->set_timing_resolution(400.F);
        scanner->set_up();
        VectorWithOffset<int> num_axial(b.get_min_segment_num(), b.get_max_segment_num()), min_rd(num_axial), max_rd(num_axial);
        for (int s = b.get_min_segment_num(); s <= b.get_max_segment_num(); ++s)
          {
            num_axial[s] = b.get_num_axial_poss(s);
            min_rd[s] = b.get_min_ring_difference(s);
            max_rd[s] = b.get_max_ring_difference(s);
          }
        auto tof_blocks = std::make_shared<ProjDataInfoBlocksOnCylindricalNoArcCorr>(
            scanner, num_axial, min_rd, max_rd, b.get_num_views(), b.get_num_tangential_poss());
        tof_blocks->set_tof_mash_factor(1);
        if (!tof_blocks->is_tof_data())
          {
            std::fprintf(stderr, "starproj_stir_refused: could not make TOF block data\n");
            return 1;
          }
        shared_ptr<Image> blocks_image(new VoxelsOnCartesianGrid<float>(*tof_blocks));
        expect_projectors_refuse(
            "TOF data of the block geometry", { "ProjDataInfoBlocksOnCylindricalNoArcCorr", "TOF" }, tof_blocks, blocks_image);
      }
    }
  catch (const std::exception& e)
    {
      std::fprintf(stderr, "starproj_stir_refused: %s\n", e.what());
      return 1;
    }
  std::printf("%d of %d cases refused at set_up with a message naming what was refused\n", cases - failures, cases);
  return failures == 0 ? 0 : 1;
}
