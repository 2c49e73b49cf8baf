// SPDX-License-Identifier: Apache-2.0
// OSMAPOSL with the "Starproj" projectors (and the "Timed" pair) and the objective function "...AndProjData using
// Starproj" available: STIR's reconstruction, parameters from a .par file; with that objective function and no prior
// the updates run on starproj's devices (OSMAPOSLReconstructionStarproj). Prints the wall time of each sub-iteration
// (OSMAPOSL's update of the estimate with one subset's gradient; then, apart, the end-of-sub-iteration work: min/max,
// filters, saving) and, when the projector pair is "Timed", the wall time spent in the projectors during each (all
// calls; and apart, those of the forward projector and those of the back projector, which may overlap as STIR's
// threads call both side by side).
// usage: starproj_OSMAPOSL reconstruction.par

#include "stir/DiscretisedDensity.h"
#include "stir/HighResWallClockTimer.h"
#include "stir/Succeeded.h"
#include "stir_starproj/OSMAPOSLReconstructionStarproj.h"
#include "stir_starproj/ProjectorByBinPairTimed.h"

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

class TimedOSMAPOSL : public stir::OSMAPOSLReconstructionStarproj
{
public:
  explicit TimedOSMAPOSL(const std::string& par)
      : stir::OSMAPOSLReconstructionStarproj(par)
  {}

  void update_estimate(Image& estimate) override
  {
    const stir::TimedProjectorTotals before = stir::timed_projector_totals();
    const Clock::time_point t = Clock::now();
    const int on_devices = this->updates_on_devices();
    stir::OSMAPOSLReconstructionStarproj::update_estimate(estimate);
    if (this->updates_on_devices() != on_devices)
      sproj_wait_all(); // an update on the devices returns once submitted: its time is until it is done
    _update_s = since(t);
    const stir::TimedProjectorTotals after = stir::timed_projector_totals();
    typedef stir::TimedProjectorTotals T;
    auto busy = [&](int kind) { return after.busy_s[kind] - before.busy_s[kind]; };
    _projectors_s = after.any_busy_s - before.any_busy_s;
    _forward_s = busy(T::set_input) + busy(T::forward);
    _back_s = busy(T::start) + busy(T::back) + busy(T::output);
  }

protected:
  void end_of_iteration_processing(Image& estimate) override
  {
    const Clock::time_point t = Clock::now();
    stir::OSMAPOSLReconstructionStarproj::end_of_iteration_processing(estimate);
    std::printf("starproj_OSMAPOSL: sub-iteration %d: update %.6f s, in projectors %.6f s, end of sub-iteration %.6f s "
                "(forward projector %.6f s, back projector %.6f s)\n",
                this->get_subiteration_num(), _update_s, _projectors_s, since(t), _forward_s, _back_s);
    std::fflush(stdout);
  }

private:
  double _update_s = 0;
  double _projectors_s = 0;
  double _forward_s = 0; // set_input and forward projections
  double _back_s = 0;    // start_accumulating_in_new_target, back projections, get_output
};
} // namespace

int
main(int argc, char** argv)
{
  using namespace stir;
  HighResWallClockTimer timer;
  timer.start();
  bool ok;
  // STIR reports bad parameters and data with error(), which throws: the program then stops with its message (STIR's
  // own programs would end in std::terminate)
  try
    {
      TimedOSMAPOSL reconstruction(argc > 1 ? argv[1] : "");
      ok = reconstruction.reconstruct() == Succeeded::yes;
      std::printf("starproj_OSMAPOSL: updates on starproj's devices: %d, on the host: %d\n",
                  reconstruction.updates_on_devices(), reconstruction.updates_on_host());
    } // a Timed pair prints its totals as it goes
  catch (const std::exception& e)
    {
      std::fprintf(stderr, "starproj_OSMAPOSL: stopped: %s\n", e.what());
      return EXIT_FAILURE;
    }
  timer.stop();
  if (ok)
    std::cout << "Total Wall clock time: " << timer.value() << " seconds" << std::endl;
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
