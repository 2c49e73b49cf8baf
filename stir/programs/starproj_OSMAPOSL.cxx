// SPDX-License-Identifier: Apache-2.0
// OSMAPOSL with the "Starproj" projectors (and the "Timed" pair) and the objective functions using Starproj
// available: STIR's reconstruction, parameters from a .par file; with such an objective function and no prior the
// updates run on starproj's devices (OSMAPOSLReconstructionStarproj). Prints the wall time of each sub-iteration
// (OSMAPOSL's update of the estimate with one subset's gradient; then, apart, the end-of-sub-iteration work) and,
// when the projector pair is "Timed", the wall time spent in the projectors during each (timed_reconstruction.h).
// usage: starproj_OSMAPOSL reconstruction.par

#include "stir_starproj/OSMAPOSLReconstructionStarproj.h"
#include "stir_starproj/StarprojHostMemory.h"
#include "timed_reconstruction.h"

int
main(int argc, char** argv)
{
  stir::starproj_use_huge_pages(argv); // before any allocation that counts: glibc reads its tunables at start
  return run_timed_reconstruction<stir::OSMAPOSLReconstructionStarproj>(argc > 1 ? argv[1] : "", "starproj_OSMAPOSL");
}
