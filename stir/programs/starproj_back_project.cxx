// SPDX-License-Identifier: Apache-2.0
// Back projection of projection data with a projector given in a .par file ("Starproj" available).
// usage: starproj_back_project output proj_data template_image back_projector.par

#include "stir_starproj/StarprojHostMemory.h"
#include "stir/DiscretisedDensity.h"
#include "stir/IO/OutputFileFormat.h"
#include "stir/IO/read_from_file.h"
#include "stir/KeyParser.h"
#include "stir/ProjData.h"
#include "stir/Succeeded.h"
#include "stir/recon_buildblock/BackProjectorByBin.h"

#include <cstdlib>
#include <iostream>

int
main(int argc, char** argv)
{
  stir::starproj_use_huge_pages(argv); // before any allocation that counts: glibc reads its tunables at start
  using namespace stir;
  if (argc != 5)
    {
      std::cerr << "usage: " << argv[0] << " output proj_data template_image back_projector.par\n"
                << "  the .par file: Back Projector parameters := type := Starproj ... End :=\n";
      return EXIT_FAILURE;
    }
  shared_ptr<ProjData> proj_data = ProjData::read_from_file(argv[2]);
  shared_ptr<DiscretisedDensity<3, float>> image(read_from_file<DiscretisedDensity<3, float>>(argv[3]));
  shared_ptr<BackProjectorByBin> projector;
  KeyParser parser;
  parser.add_start_key("Back Projector parameters");
  parser.add_parsing_key("type", &projector);
  parser.add_stop_key("END");
  if (!parser.parse(argv[4]) || !projector)
    {
      std::cerr << "could not read a back projector from " << argv[4] << "\n";
      return EXIT_FAILURE;
    }
  image->set_exam_info(proj_data->get_exam_info());
  image->fill(0.F);
  projector->set_up(proj_data->get_proj_data_info_sptr()->create_shared_clone(), image);
  projector->start_accumulating_in_new_target();
  projector->back_project(*proj_data);
  projector->get_output(*image);
  const bool ok = OutputFileFormat<DiscretisedDensity<3, float>>::default_sptr()->write_to_file(argv[1], *image) == Succeeded::yes;
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
