// SPDX-License-Identifier: Apache-2.0
// Test helper: STIR's lm_to_projdata, i.e. its LmToProjData class run on a .par file of lm_to_projdata's keys (STIR's
// installation for the tests builds a few programs only, not this one). Histograms listmode data into projection data.
//
// usage: starproj_stir_lm_to_projdata lm_to_projdata.par

#include "stir/listmode/LmToProjData.h"

#include <cstdio>
#include <cstdlib>
#include <exception>

int
main(int argc, char** argv)
{
  if (argc != 2)
    {
      std::fprintf(stderr, "usage: %s lm_to_projdata.par\n", argv[0]);
      return 2;
    }
  try
    {
      stir::LmToProjData application(argv[1]);
      application.process_data();
    }
  catch (const std::exception& e)
    {
      std::fprintf(stderr, "starproj_stir_lm_to_projdata: %s\n", e.what());
      return EXIT_FAILURE;
    }
  return EXIT_SUCCESS;
}
