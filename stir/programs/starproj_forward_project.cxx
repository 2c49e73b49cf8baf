// SPDX-License-Identifier: Apache-2.0
// Forward projection of an image with a projector given in a .par file ("Starproj" available).
// usage: starproj_forward_project output image template_proj_data forward_projector.par

#include "stir_starproj/StarprojHostMemory.h"
#include "stir/DiscretisedDensity.h"
#include "stir/IO/read_from_file.h"
#include "stir/KeyParser.h"
#include "stir/ProjDataInterfile.h"
#include "stir/recon_buildblock/ForwardProjectorByBin.h"

#include <cstdlib>
#include <iostream>

int
main(int argc, char** argv)
{
  stir::starproj_use_huge_pages(argv); // before any allocation that counts: glibc reads its tunables at start
  using namespace stir;
  if (argc != 5)
    {
      std::cerr << "usage: " << argv[0] << " output image template_proj_data forward_projector.par\n"
                << "  the .par file: Forward Projector parameters := type := Starproj ... End :=\n";
      return EXIT_FAILURE;
    }
  shared_ptr<DiscretisedDensity<3, float>> image(read_from_file<DiscretisedDensity<3, float>>(argv[2]));
  shared_ptr<ProjData> templ = ProjData::read_from_file(argv[3]);
  shared_ptr<ForwardProjectorByBin> projector;
  KeyParser parser;
  parser.add_start_key("Forward Projector parameters");
  parser.add_parsing_key("type", &projector);
  parser.add_stop_key("END");
  if (!parser.parse(argv[4]) || !projector)
    {
      std::cerr << "could not read a forward projector from " << argv[4] << "\n";
      return EXIT_FAILURE;
    }
  shared_ptr<ExamInfo> exam_info(image->get_exam_info().create_shared_clone());
  if (exam_info->imaging_modality.is_unknown())
    exam_info->imaging_modality = templ->get_exam_info().imaging_modality;
  projector->set_up(templ->get_proj_data_info_sptr()->create_shared_clone(), image);
  ProjDataInterfile output(exam_info, templ->get_proj_data_info_sptr()->create_shared_clone(), argv[1]);
  projector->forward_project(output, *image);
  return EXIT_SUCCESS;
}
