// SPDX-License-Identifier: Apache-2.0
// OSMAPOSL with the "Starproj" projectors (and the "Timed" pair) available: STIR's reconstruction, parameters from a
// .par file. Prints the wall time of each sub-iteration (OSMAPOSL's update of the estimate with one subset's
// gradient; then, apart, the end-of-sub-iteration work: min/max, filters, saving) and, when the projector pair is
// "Timed", the wall time spent in the projectors during each.
// usage: starproj_OSMAPOSL reconstruction.par

#include "stir/DiscretisedDensity.h"
#include "stir/HighResWallClockTimer.h"
#include "stir/OSMAPOSL/OSMAPOSLReconstruction.h"
#include "stir/Succeeded.h"
#include "stir_starproj/ProjectorByBinPairTimed.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
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

class TimedOSMAPOSL : public stir::OSMAPOSLReconstruction<Image>
{
public:
  explicit TimedOSMAPOSL(const std::string& par)
      : stir::OSMAPOSLReconstruction<Image>(par)
  {}

  void update_estimate(Image& estimate) override
  {
    const double projectors_before = stir::timed_projector_totals().any_busy_s;
    const Clock::time_point t = Clock::now();
    stir::OSMAPOSLReconstruction<Image>::update_estimate(estimate);
    _update_s = since(t);
    _projectors_s = stir::timed_projector_totals().any_busy_s - projectors_before;
  }

protected:
  void end_of_iteration_processing(Image& estimate) override
  {
    const Clock::time_point t = Clock::now();
    stir::OSMAPOSLReconstruction<Image>::end_of_iteration_processing(estimate);
    std::printf("starproj_OSMAPOSL: sub-iteration %d: update %.6f s, in projectors %.6f s, end of sub-iteration %.6f s\n",
                this->get_subiteration_num(), _update_s, _projectors_s, since(t));
    std::fflush(stdout);
  }

private:
  double _update_s = 0;
  double _projectors_s = 0;
};
} // namespace

int
main(int argc, char** argv)
{
  using namespace stir;
  HighResWallClockTimer timer;
  timer.start();
  bool ok;
  {
    TimedOSMAPOSL reconstruction(argc > 1 ? argv[1] : "");
    ok = reconstruction.reconstruct() == Succeeded::yes;
  } // a Timed pair prints its totals as it goes
  timer.stop();
  if (ok)
    std::cout << "Total Wall clock time: " << timer.value() << " seconds" << std::endl;
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
