// SPDX-License-Identifier: Apache-2.0
// OSSPS with the "Starproj" projectors and the objective function "...AndProjData using Starproj" available: STIR's
// reconstruction as it is (its separable paraboloidal surrogates come from the objective function's approximate
// Hessian, so with that objective function they are computed by starproj), parameters from a .par file.
// usage: starproj_OSSPS reconstruction.par

#include "stir/DiscretisedDensity.h"
#include "stir/HighResWallClockTimer.h"
#include "stir/OSSPS/OSSPSReconstruction.h"
#include "stir/Succeeded.h"

#include <cstdlib>
#include <exception>
#include <iostream>

int
main(int argc, char** argv)
{
  using namespace stir;
  if (argc != 2)
    {
      std::cerr << "usage: " << argv[0] << " reconstruction.par\n";
      return EXIT_FAILURE;
    }
  HighResWallClockTimer timer;
  timer.start();
  bool ok;
  // STIR reports bad parameters and data with error(), which throws: the program then stops with its message
  try
    {
      OSSPSReconstruction<DiscretisedDensity<3, float>> reconstruction(argv[1]);
      ok = reconstruction.reconstruct() == Succeeded::yes;
    }
  catch (const std::exception& e)
    {
      std::cerr << "starproj_OSSPS: stopped: " << e.what() << "\n";
      return EXIT_FAILURE;
    }
  timer.stop();
  if (ok)
    std::cout << "Total Wall clock time: " << timer.value() << " seconds" << std::endl;
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
