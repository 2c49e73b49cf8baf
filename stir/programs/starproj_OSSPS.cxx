// SPDX-License-Identifier: Apache-2.0
// OSSPS with the "Starproj" projectors (and the "Timed" pair) and the objective functions using Starproj available:
// STIR's reconstruction, parameters from a .par file (its separable paraboloidal surrogates come from the objective
// function's approximate Hessian, so with those objective functions they are computed by starproj); with such an
// objective function and no prior the updates run on starproj's devices (OSSPSReconstructionStarproj). Prints each
// sub-iteration's times as starproj_OSMAPOSL does (timed_reconstruction.h), and where the updates ran.
// usage: starproj_OSSPS reconstruction.par

#include "stir_starproj/OSSPSReconstructionStarproj.h"
#include "stir_starproj/StarprojHostMemory.h"
#include "timed_reconstruction.h"

#include <iostream>

int
main(int argc, char** argv)
{
  stir::starproj_use_huge_pages(argv); // before any allocation that counts: glibc reads its tunables at start
  if (argc != 2)
    {
      std::cerr << "usage: " << argv[0] << " reconstruction.par\n";
      return EXIT_FAILURE;
    }
  return run_timed_reconstruction<stir::OSSPSReconstructionStarproj>(argv[1], "starproj_OSSPS");
}
