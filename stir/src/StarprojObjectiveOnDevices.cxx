// SPDX-License-Identifier: Apache-2.0
// The resident images and the calls the objective functions using Starproj share (StarprojObjectiveOnDevices.h).

#include "stir_starproj/StarprojObjectiveOnDevices.h"

#include "stir_starproj/StarprojImageCopy.h"
#include "stir_starproj/StarprojRuntime.h"

#include "stir/TrivialDataSymmetriesForViewSegmentNumbers.h"
#include "stir/error.h"
#include "stir/warning.h"

#include <algorithm>

START_NAMESPACE_STIR

shared_ptr<DataSymmetriesForViewSegmentNumbers>
starproj_trivial_viewgram_symmetries()
{
  return shared_ptr<DataSymmetriesForViewSegmentNumbers>(new TrivialDataSymmetriesForViewSegmentNumbers);
}

StarprojObjectiveOnDevices::StarprojObjectiveOnDevices(const char* who)
    : _who(who)
{}

void
StarprojEarlySensitivities::submit(const StarprojGeometry& g,
                                   const float* m,
                                   const sproj_chunks* chunks,
                                   const std::vector<int>& lists,
                                   const std::vector<int>& sizes)
{
  release();
  // a second handle on the factors the model registers too: both only ever read them
  starproj_check(sproj_proj_register(&_m, const_cast<float*>(m), g.lors()), "sproj_proj_register");
  const int* list = lists.data();
  for (const int size : sizes)
    {
      sproj_image* image = nullptr;
      starproj_check(sproj_image_create(&image, g.dims(), g.voxel_size(), g.origin()), "sproj_image_create");
      _images.push_back(image);
      starproj_check(sproj_image_zero(image), "sproj_image_zero");
      starproj_check(sproj_back_chunks(image, _m, chunks, list, size), "sproj_back_chunks");
      list += size;
    }
  starproj_check(sproj_flush(), "sproj_flush"); // nothing held back: they run while the set-up goes on
}

void
StarprojEarlySensitivities::release()
{
  for (sproj_image* image : _images)
    if (sproj_image_unregister(image) != SPROJ_OK)
      warning(std::string("Starproj: sproj_image_unregister failed: ") + sproj_last_error());
  _images.clear();
  if (_m && sproj_proj_unregister(_m) != SPROJ_OK)
    warning(std::string("Starproj: sproj_proj_unregister failed: ") + sproj_last_error());
  _m = nullptr;
}

StarprojObjectiveOnDevices::~StarprojObjectiveOnDevices()
{
  release();
}

void
StarprojObjectiveOnDevices::release()
{
  // the reconstruction first (it uses the inputs and x), then what it used
  if (_recon)
    sproj_recon_destroy(_recon);
  _recon = nullptr;
  _inputs.reset();
  for (sproj_image* img : {_x, _v, _out})
    if (img)
      sproj_image_unregister(img);
  _x = _v = _out = nullptr;
  for (const Uploaded& u : _uploaded)
    sproj_image_unregister(u.img);
  _uploaded.clear();
  _x_buffer.reset();
  _v_buffer.reset();
  _out_buffer.reset();
  _sens_ahead = -1;
  _sens_ahead_img = nullptr;
  _geometry.reset();
  _estimate_on_devices = false;
  _own_sensitivities = false;
}

void
StarprojObjectiveOnDevices::make_images(const std::shared_ptr<StarprojGeometry>& g, int rim)
{
  release();
  _geometry = g;
  _rim = rim;
  _copy_threads = starproj_host_threads();
  const int64_t n = g->num_voxels();
  _x_buffer.reset(new StarprojHostBuffer(n));
  _v_buffer.reset(new StarprojHostBuffer(n));
  _out_buffer.reset(new StarprojHostBuffer(n));
  starproj_check(sproj_image_register(&_x, _x_buffer->data(), g->dims(), g->voxel_size(), g->origin()),
                 "sproj_image_register");
  starproj_check(sproj_image_register(&_v, _v_buffer->data(), g->dims(), g->voxel_size(), g->origin()),
                 "sproj_image_register");
  starproj_check(sproj_image_register(&_out, _out_buffer->data(), g->dims(), g->voxel_size(), g->origin()),
                 "sproj_image_register");
}

void
StarprojObjectiveOnDevices::adopt(sproj_recon* recon,
                                  int num_subsets,
                                  std::unique_ptr<StarprojReconInputs> inputs,
                                  bool own_sensitivities)
{
  _recon = recon;
  _num_subsets = num_subsets;
  _inputs = std::move(inputs);
  _own_sensitivities = own_sensitivities;
}

void
StarprojObjectiveOnDevices::check_set_up(const char* what) const
{
  if (!_recon)
    error(std::string(_who) + ": " + what + " before set_up");
}

void
StarprojObjectiveOnDevices::load(const TargetT& image, sproj_image* img, float* buffer) const
{
  if (img == _sens_ahead_img)
    _sens_ahead = -1;
  if (img == _x)
    _estimate_on_devices = false; // the caller's estimate replaces the devices'
  starproj_check(sproj_image_sync(img, SPROJ_SYNC_WRITE), "sproj_image_sync");
  starproj_image_to_array(image, buffer, _rim, _copy_threads);
}

sproj_image*
StarprojObjectiveOnDevices::written_out() const
{
  if (_sens_ahead_img == _out)
    _sens_ahead = -1;
  return _out;
}

void
StarprojObjectiveOnDevices::add_array(TargetT& image, const float* values, float scale) const
{
  starproj_array_add_to_image(values, scale, image, _rim, _copy_threads);
}

void
StarprojObjectiveOnDevices::gradient(TargetT& gradient, const TargetT& estimate, int subset, bool add_sensitivity)
{
  check_set_up("gradient");
  std::lock_guard<std::mutex> lock(_lock);
  _times.start();
  load(estimate, _x, _x_buffer->data());
  _times.mark("gradient: image in");
  starproj_check(sproj_recon_gradient(_recon, subset, _x, written_out(), add_sensitivity ? SPROJ_GRADIENT_ADD_SENSITIVITY : 0),
                 "sproj_recon_gradient");
  starproj_check(sproj_image_sync(_out, SPROJ_SYNC_READ), "sproj_image_sync");
  _times.mark("gradient: task graph");
  starproj_array_to_image(_out_buffer->data(), gradient, _rim, _copy_threads);
  _times.mark("gradient: image out");
}

double
StarprojObjectiveOnDevices::objective_value(const TargetT& estimate, int subset)
{
  check_set_up("objective function");
  std::lock_guard<std::mutex> lock(_lock);
  _times.start();
  load(estimate, _x, _x_buffer->data());
  double nll = 0;
  starproj_check(sproj_recon_subset_objective(_recon, subset, _x, &nll), "sproj_recon_subset_objective");
  _times.mark("objective value");
  return -nll;
}

void
StarprojObjectiveOnDevices::add_sensitivity(TargetT& sensitivity, int subset) const
{
  check_set_up("sensitivity");
  std::lock_guard<std::mutex> lock(_lock);
  _times.start();
  // STIR asks for the subsets one after another: subset k was copied (on the devices, into one of the two resident
  // images out and v, and started home) by the call for k - 1, and k + 1 is copied into the other one while k is
  // added here. No host copy of the reconstruction's own images is made (sproj_recon_sensitivity leaves one behind
  // per subset, 1.26 GB for the mMR's 21, each allocated while STIR waits).
  sproj_image* img = _sens_ahead == subset ? _sens_ahead_img : nullptr;
  if (!img)
    {
      img = _out;
      starproj_check(sproj_recon_sensitivity_image(_recon, subset, img, SPROJ_SENSITIVITY_TO_HOST),
                     "sproj_recon_sensitivity_image");
    }
  _sens_ahead = -1;
  if (subset + 1 < _num_subsets)
    {
      sproj_image* next = img == _out ? _v : _out;
      starproj_check(sproj_recon_sensitivity_image(_recon, subset + 1, next, SPROJ_SENSITIVITY_TO_HOST),
                     "sproj_recon_sensitivity_image");
      _sens_ahead = subset + 1;
      _sens_ahead_img = next;
    }
  _times.mark("sensitivities to STIR: copies submitted");
  starproj_check(sproj_image_sync(img, SPROJ_SYNC_READ), "sproj_image_sync");
  _times.mark("sensitivities to STIR: fetch (the devices' copy, then home)");
  add_array(sensitivity, img == _out ? _out_buffer->data() : _v_buffer->data(), 1.F);
  _times.mark("sensitivities to STIR: add into STIR's image");
  if (subset + 1 == _num_subsets && starproj_verbosity() >= 1)
    _times.report(_who);
}

void
StarprojObjectiveOnDevices::add_hessian_times(
    TargetT& output, const TargetT* estimate, const TargetT& input, int subset, bool approximate) const
{
  check_set_up("Hessian");
  std::lock_guard<std::mutex> lock(_lock);
  if (!approximate)
    load(*estimate, _x, _x_buffer->data());
  load(input, _v, _v_buffer->data());
  starproj_check(
      sproj_recon_hessian_times(_recon, subset, approximate ? nullptr : _x, _v, written_out(), approximate ? SPROJ_HESSIAN_APPROXIMATE : 0),
      "sproj_recon_hessian_times");
  starproj_check(sproj_image_sync(_out, SPROJ_SYNC_READ), "sproj_image_sync");
  add_array(output, _out_buffer->data(), -1.F); // starproj's product is that of -L: STIR's is its negative
}

void
StarprojObjectiveOnDevices::update(
    const TargetT& estimate, int subset, const TargetT& sensitivity, float lo, float hi, bool use_own)
{
  check_set_up("update");
  std::lock_guard<std::mutex> lock(_lock);
  _times.start();
  if (!_estimate_on_devices)
    load(estimate, _x, _x_buffer->data());
  if (use_own)
    {
      _times.mark("update: image in");
      starproj_check(sproj_recon_update(_recon, subset, _x, written_out(), lo, hi), "sproj_recon_update");
      _estimate_on_devices = true;
      _times.mark("update: submitted");
      return;
    }
  sproj_image* den = resident_copy(sensitivity);
  _times.mark("update: image in");
  starproj_check(sproj_recon_gradient(_recon, subset, _x, written_out(), SPROJ_GRADIENT_ADD_SENSITIVITY), "sproj_recon_gradient");
  starproj_check(sproj_image_update_multiplicative(_x, _out, den, lo, hi), "sproj_image_update_multiplicative");
  _estimate_on_devices = true;
  _times.mark("update: submitted");
}

void
StarprojObjectiveOnDevices::additive_update_on_devices(const TargetT& estimate, int subset, const TargetT& denominator,
                                                       float num_scale, float step, float lo, float hi)
{
  check_set_up("additive update");
  std::lock_guard<std::mutex> lock(_lock);
  _times.start();
  if (!_estimate_on_devices)
    load(estimate, _x, _x_buffer->data());
  sproj_image* den = resident_copy(denominator);
  _times.mark("update: image in");
  starproj_check(sproj_recon_gradient(_recon, subset, _x, written_out(), 0), "sproj_recon_gradient");
  starproj_check(sproj_image_update_additive(_x, _out, den, num_scale, step, lo, hi), "sproj_image_update_additive");
  _estimate_on_devices = true;
  _times.mark("update: submitted");
}

sproj_image*
StarprojObjectiveOnDevices::resident_copy(const TargetT& image)
{
  for (const Uploaded& u : _uploaded)
    if (u.stir_image == &image)
      return u.img;
  const StarprojGeometry& g = *_geometry;
  std::unique_ptr<StarprojHostBuffer> buffer(new StarprojHostBuffer(g.num_voxels()));
  starproj_image_to_array(image, buffer->data(), _rim, _copy_threads);
  sproj_image* img = nullptr;
  starproj_check(sproj_image_register(&img, buffer->data(), g.dims(), g.voxel_size(), g.origin()), "sproj_image_register");
  _uploaded.push_back({&image, std::move(buffer), img});
  return img;
}

void
StarprojObjectiveOnDevices::estimate_to_host(TargetT& estimate)
{
  if (!_recon || !_estimate_on_devices)
    return;
  std::lock_guard<std::mutex> lock(_lock);
  _times.start();
  starproj_check(sproj_image_sync(_x, SPROJ_SYNC_READ), "sproj_image_sync");
  starproj_array_to_image(_x_buffer->data(), estimate, _rim, _copy_threads);
  // the caller may change its copy (filters): the next update starts from it
  _estimate_on_devices = false;
  _times.mark("estimate to the host");
}

END_NAMESPACE_STIR
