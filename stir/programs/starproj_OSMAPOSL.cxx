// SPDX-License-Identifier: Apache-2.0
// OSMAPOSL with the "Starproj" projectors available: STIR's reconstruction, parameters from a .par file.
// usage: starproj_OSMAPOSL reconstruction.par

#include "stir/DiscretisedDensity.h"
#include "stir/HighResWallClockTimer.h"
#include "stir/OSMAPOSL/OSMAPOSLReconstruction.h"
#include "stir/Succeeded.h"

#include <cstdlib>
#include <iostream>

int
main(int argc, char** argv)
{
  using namespace stir;
  HighResWallClockTimer timer;
  timer.start();
  OSMAPOSLReconstruction<DiscretisedDensity<3, float>> reconstruction(argc > 1 ? argv[1] : "");
  const bool ok = reconstruction.reconstruct() == Succeeded::yes;
  timer.stop();
  if (ok)
    std::cout << "Total Wall clock time: " << timer.value() << " seconds" << std::endl;
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
