// SPDX-License-Identifier: Apache-2.0
// What starproj_OSMAPOSL and starproj_OSSPS share: STIR's reconstruction (one whose updates may run on starproj's
// devices) timed sub-iteration by sub-iteration, and the run of one from a .par file.
//
// Before the first update it prints when that update starts (the system clock, so that a caller can take the set-up's
// time from the program's start). Each sub-iteration prints one line: the wall time of the update (until its tasks are done when it ran on the
// devices), the time spent in the projectors during it when the projector pair is "Timed" (all calls; and apart,
// those of the forward projector and those of the back projector, which may overlap as STIR's threads call both side
// by side; 0 without a Timed pair), and the end-of-sub-iteration work (min/max, filters, saving).
#ifndef STARPROJ_STIR_TIMED_RECONSTRUCTION_H
#define STARPROJ_STIR_TIMED_RECONSTRUCTION_H

#include "stir/DiscretisedDensity.h"
#include "stir/HighResWallClockTimer.h"
#include "stir/Succeeded.h"
#include "stir_starproj/ProjectorByBinPairTimed.h"
#include "stir_starproj/StarprojRuntime.h"

#include <starproj.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>

template <class Base>
class TimedReconstruction : public Base
{
  typedef stir::DiscretisedDensity<3, float> Image;
  typedef std::chrono::steady_clock Clock;

public:
  TimedReconstruction(const std::string& par, const char* program)
      : Base(par),
        _program(program)
  {}

  void update_estimate(Image& estimate) override
  {
    if (!_updated)
      {
        // the end of the set-up, on the clock a caller's `date +%s.%N` reads: from the program's start to here is
        // what STIR and the objective function set up before the first update
        std::printf("%s: first update starts at %.6f s (system clock)\n", _program,
                    std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
        std::fflush(stdout);
        _updated = true;
      }
    const stir::TimedProjectorTotals before = stir::timed_projector_totals();
    const Clock::time_point t = Clock::now();
    const int on_devices = this->updates_on_devices();
    Base::update_estimate(estimate);
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
    Base::end_of_iteration_processing(estimate);
    std::printf("%s: sub-iteration %d: update %.6f s, in projectors %.6f s, end of sub-iteration %.6f s "
                "(forward projector %.6f s, back projector %.6f s)\n",
                _program, this->get_subiteration_num(), _update_s, _projectors_s, since(t), _forward_s, _back_s);
    std::fflush(stdout);
  }

private:
  const char* _program;
  bool _updated = false;
  double _update_s = 0;
  double _projectors_s = 0;
  double _forward_s = 0; // set_input and forward projections
  double _back_s = 0;    // start_accumulating_in_new_target, back projections, get_output

  static double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
};

//! Runs the reconstruction Recon from the .par file par ("": STIR asks for the parameters) as program; prints where
//! its updates ran and its total wall time. STIR reports bad parameters and data with error(), which throws: the
//! program then stops with its message (STIR's own programs would end in std::terminate). Returns the exit status.
template <class Recon>
int
run_timed_reconstruction(const std::string& par, const char* program)
{
  stir::HighResWallClockTimer timer;
  timer.start();
  bool ok;
  try
    {
      TimedReconstruction<Recon> reconstruction(par, program);
      ok = reconstruction.reconstruct() == stir::Succeeded::yes;
      std::printf("%s: updates on starproj's devices: %d, on the host: %d\n",
                  program, reconstruction.updates_on_devices(), reconstruction.updates_on_host());
    } // a Timed pair prints its totals as it goes
  catch (const std::exception& e)
    {
      std::fprintf(stderr, "%s: stopped: %s\n", program, stir::starproj_error_text(e.what()).c_str());
      return EXIT_FAILURE;
    }
  timer.stop();
  if (ok)
    std::cout << "Total Wall clock time: " << timer.value() << " seconds" << std::endl;
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}

#endif
