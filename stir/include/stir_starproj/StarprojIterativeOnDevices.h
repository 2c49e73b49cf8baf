// SPDX-License-Identifier: Apache-2.0
/*
  What STIR's iterative reconstructions whose updates run on starproj's devices share (OSMAPOSLReconstructionStarproj,
  OSSPSReconstructionStarproj): the objective function using Starproj they update with (found with a dynamic_cast;
  none: STIR's reconstruction as it is), the count of updates done on the devices and on the host, an update done by
  STIR on the host with the estimate brought home first, and the end of a sub-iteration, where the estimate stays on
  the devices unless STIR's work there reads it (objective function reports, inter-iteration filters, saving, the
  last sub-iteration); with verbosity 1, the memory held at the end of each iteration.
*/
#ifndef STIR_STARPROJ_STARPROJITERATIVEONDEVICES_H
#define STIR_STARPROJ_STARPROJITERATIVEONDEVICES_H

#include "stir/DiscretisedDensity.h"
#include "stir/info.h"
#include "stir/is_null_ptr.h"
#include "stir_starproj/StarprojMemory.h"
#include "stir_starproj/StarprojObjectiveOnDevices.h"

#include <string>

START_NAMESPACE_STIR

template <class Base>
class StarprojIterativeOnDevices : public Base
{
public:
  typedef DiscretisedDensity<3, float> TargetT;

  explicit StarprojIterativeOnDevices(const std::string& parameter_filename)
      : Base(parameter_filename)
  {}
  //! sub-iterations whose update ran on the devices, and those STIR did on the host
  int updates_on_devices() const { return _on_devices; }
  int updates_on_host() const { return _on_host; }

protected:
  StarprojObjectiveOnDevices* starproj_objective() const
  {
    return dynamic_cast<StarprojObjectiveOnDevices*>(this->objective_function_sptr.get());
  }

  //! STIR's own update, on the host, of the estimate brought home first
  void update_on_host(TargetT& current_image_estimate)
  {
    if (StarprojObjectiveOnDevices* f = starproj_objective())
      f->estimate_to_host(current_image_estimate);
    ++_on_host;
    Base::update_estimate(current_image_estimate);
  }
  void counted_on_devices() { ++_on_devices; }

  //! whether STIR's end-of-sub-iteration work reads or changes the estimate at this sub-iteration
  bool host_needs_estimate() const
  {
    const int n = this->subiteration_num;
    if (n == this->num_subiterations)
      return true; // the result, the post-filter, the last save
    if (this->report_objective_function_values_interval > 0 && n % this->report_objective_function_values_interval == 0)
      return true;
    if (this->inter_iteration_filter_interval > 0 && !is_null_ptr(this->inter_iteration_filter_ptr)
        && n % this->inter_iteration_filter_interval == 0)
      return true;
    return !this->_disable_output && n % this->save_interval == 0;
  }

  //! with the objective function's verbosity 1 or more, at the end of each iteration (every num_subsets
  //! sub-iterations): the memory the process holds on the host and StarPU on each GPU, so that a long run shows it
  //! flat (stir/tests' long run checks the resident set)
  void report_memory() const
  {
    const StarprojObjectiveOnDevices* f = starproj_objective();
    if (!f || f->starproj_verbosity() < 1 || this->num_subsets <= 0 || this->subiteration_num % this->num_subsets != 0)
      return;
    info(this->method_info() + " iteration " + std::to_string(this->subiteration_num / this->num_subsets)
             + " (sub-iteration " + std::to_string(this->subiteration_num) + ") memory: " + starproj_memory_report(),
         0);
  }

  void end_of_iteration_processing(TargetT& current_estimate) override
  {
    report_memory();
    StarprojObjectiveOnDevices* f = starproj_objective();
    if (f && f->estimate_on_devices())
      {
        if (!host_needs_estimate())
          {
            info(this->method_info() + " subiteration #" + std::to_string(this->subiteration_num)
                     + " completed (the estimate stays on starproj's devices)",
                 2);
            return;
          }
        f->estimate_to_host(current_estimate);
      }
    Base::end_of_iteration_processing(current_estimate);
  }

private:
  int _on_devices = 0, _on_host = 0;
};

END_NAMESPACE_STIR

#endif
