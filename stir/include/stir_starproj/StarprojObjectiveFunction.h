// SPDX-License-Identifier: Apache-2.0
/*
  What the objective functions using Starproj (of projection data, of listmode data) share beyond the calls of
  StarprojObjectiveOnDevices: the class between STIR's objective function and each of them. It reads the settings of
  the starproj runtime in the objective function's .par section and answers STIR's calls (subset gradients, values,
  subset sensitivities, Hessian products at an estimate, OSMAPOSL's update on the devices) with those calls' task
  graphs. Each objective function keeps what differs: its set-up (what it registers with starproj) and the
  approximate Hessian (projection data only).
*/
#ifndef STIR_STARPROJ_STARPROJOBJECTIVEFUNCTION_H
#define STIR_STARPROJ_STARPROJOBJECTIVEFUNCTION_H

#include "stir/DiscretisedDensity.h"
#include "stir/RegisteredParsingObject.h"
#include "stir/recon_buildblock/GeneralisedObjectiveFunction.h"
#include "stir/Succeeded.h"
#include "stir/shared_ptr.h"
#include "stir_starproj/StarprojImageCopy.h"
#include "stir_starproj/StarprojObjectiveOnDevices.h"
#include "stir_starproj/StarprojRuntime.h"
#include "stir_starproj/StarprojSettings.h"

#include <memory>
#include <string>
#include <vector>

START_NAMESPACE_STIR

//! Derived: the objective function (its registered_name also names its .par section, "... Parameters");
//! STIRBase: STIR's objective function whose keys it reads. Derived derives from it through STIR's
//! RegisteredParsingObject (as its Parent).
template <class Derived, class STIRBase>
class StarprojObjectiveFunction : public STIRBase, public StarprojObjectiveOnDevices
{
public:
  typedef DiscretisedDensity<3, float> TargetT;
  //! STIR's bound on the quotients of its Poisson objective functions (its divide_and_truncate and
  //! accumulate_loglikelihood): starproj applies the same rule (sproj_recon_config::max_ratio)
  static constexpr float stir_max_quotient = 10000.F;

  //! who: the name in messages
  explicit StarprojObjectiveFunction(const char* who)
      : StarprojObjectiveOnDevices(who)
  {}
  ~StarprojObjectiveFunction() override
  {
    if (_settings.verbosity >= 2)
      step_times().report(Derived::registered_name);
  }

  StarprojSettings& starproj_settings() { return _settings; }
  int starproj_verbosity() const override { return _settings.verbosity; }

  void actual_compute_subset_gradient_without_penalty(TargetT& gradient,
                                                      const TargetT& current_estimate,
                                                      const int subset_num,
                                                      const bool add_sensitivity) override
  {
    this->gradient(gradient, current_estimate, subset_num, add_sensitivity);
  }
  void add_subset_sensitivity(TargetT& sensitivity, const int subset_num) const override
  {
    add_sensitivity(sensitivity, subset_num);
  }
  void multiplicative_update_on_devices(
      const TargetT& estimate, int subset_num, const TargetT& sensitivity, float lo, float hi) override
  {
    update(estimate, subset_num, sensitivity, lo, hi, own_sensitivities() && this->get_use_subset_sensitivities());
  }

protected:
  double actual_compute_objective_function_without_penalty(const TargetT& current_estimate, const int subset_num) override
  {
    return objective_value(current_estimate, subset_num);
  }
  Succeeded actual_accumulate_sub_Hessian_times_input_without_penalty(TargetT& output,
                                                                      const TargetT& current_image_estimate,
                                                                      const TargetT& input,
                                                                      const int subset_num) const override
  {
    add_hessian_times(output, &current_image_estimate, input, subset_num, false);
    return Succeeded::yes;
  }
  //! starproj projects every viewgram of a subset itself (no symmetries): balanced when every subset has as many views
  bool actual_subsets_are_approximately_balanced(std::string& warning_message) const override
  {
    const int num_views = num_views_in_subsets();
    if (num_views % this->num_subsets == 0)
      return true;
    warning_message += "the " + std::to_string(num_views) + " views do not divide into " + std::to_string(this->num_subsets)
                       + " subsets of equal size\n";
    return false;
  }
  //! set_up's first steps: the LORs of the data (or of the scanner's bins) registered with starproj (copied to the
  //! GPUs now with upload) and the devices chosen; then the resident images, with the rim truncation asked for
  std::shared_ptr<StarprojGeometry>
  register_lors(const shared_ptr<const ProjDataInfo>& proj_data_info_sptr, const TargetT& target, bool upload)
  {
    auto geometry = std::make_shared<StarprojGeometry>(proj_data_info_sptr, target, _settings, upload);
    geometry->runtime()->use_devices(_settings.devices, _settings.verbosity);
    return geometry;
  }
  void make_images(const std::shared_ptr<StarprojGeometry>& geometry)
  {
    StarprojObjectiveOnDevices::make_images(geometry, _settings.restrict_to_cylindrical_FOV ? geometry->rim_truncation() : -1);
  }
  //! set_up's last step: the reconstruction object on the registered inputs (cfg with STIR's bound on quotients),
  //! reported with verbosity 1. Sensitivities STIR read from files (recompute sensitivity := 0) are the
  //! reconstruction's own, copied into starproj's order: nothing is back projected for them. Sensitivities the
  //! set-up submitted before reading its data (inputs->early_sensitivities) are handed over, then released.
  void create_recon(sproj_recon_config& cfg, std::unique_ptr<StarprojReconInputs> inputs)
  {
    cfg.max_ratio = stir_max_quotient;
    std::vector<const float*> given;
    if (!this->get_recompute_sensitivity())
      {
        const StarprojGeometry& g = *geometry();
        const int rim = _settings.restrict_to_cylindrical_FOV ? g.rim_truncation() : -1;
        const int n = this->get_use_subset_sensitivities() ? this->num_subsets : 1;
        inputs->given_sensitivities.resize(n);
        for (int k = 0; k < n; ++k)
          {
            StarprojFloats& into = inputs->given_sensitivities[k];
            into.resize(g.num_voxels());
            starproj_image_to_array(this->get_subset_sensitivity(k), into.data(), rim, copy_threads());
            given.push_back(into.data());
          }
        cfg.sensitivities = given.data();
        cfg.num_sensitivities = n;
        times().mark("set_up: sensitivities read by STIR, copied");
      }
    else if (!inputs->early_sensitivities.empty())
      {
        cfg.sensitivity_images = inputs->early_sensitivities.images();
        cfg.num_sensitivities = inputs->early_sensitivities.count();
      }
    sproj_recon* recon = nullptr;
    starproj_check(sproj_recon_create(&recon, resident_x(), &cfg), "sproj_recon_create");
    inputs->early_sensitivities.release(); // the reconstruction holds its copies (this waits for them)
    adopt(recon, cfg.num_subsets, std::move(inputs), true);
    times().mark("set_up: registration and sensitivities");
    if (_settings.verbosity >= 1)
      times().report(Derived::registered_name);
  }
  //! the views the subsets are made of (the data's, or the scanner's bins' for listmode data)
  virtual int num_views_in_subsets() const = 0;

  void set_defaults() override
  {
    STIRBase::set_defaults();
    _settings = StarprojSettings();
  }
  void initialise_keymap() override
  {
    STIRBase::initialise_keymap();
    const std::string section = std::string(Derived::registered_name) + " Parameters";
    this->parser.add_start_key(section);
    this->parser.add_stop_key("End " + section);
    _settings.add_keys(this->parser);
  }
  bool post_processing() override
  {
    if (STIRBase::post_processing())
      return true;
    return !_settings.check();
  }

  StarprojSettings _settings;
};

//! The base class of an objective function using Starproj: STIR's registered class on StarprojObjectiveFunction.
template <class Derived, class STIRBase>
using StarprojRegisteredObjectiveFunction = RegisteredParsingObject<Derived,
                                                                    GeneralisedObjectiveFunction<DiscretisedDensity<3, float>>,
                                                                    StarprojObjectiveFunction<Derived, STIRBase>>;

END_NAMESPACE_STIR

#endif
