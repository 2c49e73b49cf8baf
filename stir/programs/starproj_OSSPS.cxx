// SPDX-License-Identifier: Apache-2.0
// OSSPS with the "Starproj" projectors and the objective functions using Starproj available: STIR's reconstruction,
// parameters from a .par file (its separable paraboloidal surrogates come from the objective function's approximate
// Hessian, so with those objective functions they are computed by starproj); with such an objective function and no
// prior the updates run on starproj's devices (OSSPSReconstructionStarproj). Prints the wall time of each
// sub-iteration's update and end-of-sub-iteration work, and the updates done on the devices and on the host.
// usage: starproj_OSSPS reconstruction.par

#include "stir/DiscretisedDensity.h"
#include "stir/HighResWallClockTimer.h"
#include "stir/Succeeded.h"
#include "stir_starproj/OSSPSReconstructionStarproj.h"

#include <starproj.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>

namespace
{
typedef stir::DiscretisedDensity<3, float> Image;
typedef std::chrono::steady_clock Clock;

double
since(Clock::time_point t)
{
  return std::chrono::duration<double>(Clock::now() - t).count();
}

class TimedOSSPS : public stir::OSSPSReconstructionStarproj
{
public:
  explicit TimedOSSPS(const std::string& par)
      : stir::OSSPSReconstructionStarproj(par)
  {}

  void update_estimate(Image& estimate) override
  {
    const Clock::time_point t = Clock::now();
    const int on_devices = this->updates_on_devices();
    stir::OSSPSReconstructionStarproj::update_estimate(estimate);
    if (this->updates_on_devices() != on_devices)
      sproj_wait_all(); // an update on the devices returns once submitted: its time is until it is done
    _update_s = since(t);
  }

protected:
  void end_of_iteration_processing(Image& estimate) override
  {
    const Clock::time_point t = Clock::now();
    stir::OSSPSReconstructionStarproj::end_of_iteration_processing(estimate);
    std::printf("starproj_OSSPS: sub-iteration %d: update %.6f s, end of sub-iteration %.6f s\n",
                this->get_subiteration_num(), _update_s, since(t));
    std::fflush(stdout);
  }

private:
  double _update_s = 0;
};
} // namespace

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
      TimedOSSPS reconstruction(argv[1]);
      ok = reconstruction.reconstruct() == Succeeded::yes;
      std::printf("starproj_OSSPS: updates on starproj's devices: %d, on the host: %d\n",
                  reconstruction.updates_on_devices(), reconstruction.updates_on_host());
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
