// SPDX-License-Identifier: Apache-2.0
/*
  What the objective functions using Starproj share, whatever their data (projection data or listmode events): the
  images they hand to starproj (the estimate x, a direction v, a result out; pinned host buffers, resident on the
  devices), the reconstruction object (sproj_recon) their set_up builds on the data it registered, STIR's
  sensitivities uploaded for the updates on the devices, and the calls every such objective function answers with
  starproj task graphs: subset gradients, objective values, subset sensitivities, Hessian products, and OSMAPOSL's
  multiplicative update where the data are.

  StarprojObjectiveOnDevices is the mix-in both objective functions derive from besides their STIR base class
  (through StarprojObjectiveFunction); OSMAPOSLReconstructionStarproj and OSSPSReconstructionStarproj find it with a
  dynamic_cast, so that their updates run on the devices with either.
*/
#ifndef STIR_STARPROJ_STARPROJOBJECTIVEONDEVICES_H
#define STIR_STARPROJ_STARPROJOBJECTIVEONDEVICES_H

#include "stir/DiscretisedDensity.h"
#include "stir_starproj/StarprojGeometry.h"
#include "stir_starproj/StarprojHostMemory.h"
#include "stir_starproj/StarprojTimes.h"

#include <starproj_recon.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

START_NAMESPACE_STIR

class DataSymmetriesForViewSegmentNumbers;

//! STIR's trivial symmetries (every viewgram on its own), for the viewgrams the objective functions evaluate their
//! normalisation on. (STIR's header defines a function out of line: one source file of a program may include it.)
shared_ptr<DataSymmetriesForViewSegmentNumbers> starproj_trivial_viewgram_symmetries();

//! The subsets' sensitivities submitted before the data are read: they need only the LORs and the factors, so their
//! back projections (of the factors over each subset's chunks, into images on the devices) run while the set-up
//! reads its data; the reconstruction takes them (sproj_recon_config.sensitivity_images, which it copies), and they
//! are released once it exists.
class StarprojEarlySensitivities
{
public:
  StarprojEarlySensitivities() = default;
  ~StarprojEarlySensitivities() { release(); }
  StarprojEarlySensitivities(const StarprojEarlySensitivities&) = delete;
  StarprojEarlySensitivities& operator=(const StarprojEarlySensitivities&) = delete;
  //! submits subset k's back projection of m (one factor per LOR of g, valid until release) over its sizes[k] chunks
  //! of chunks (a chunking of g's LORs), listed subset after subset in lists (sproj_recon_config's subset_chunks and
  //! subset_sizes form); returns at once
  void submit(const StarprojGeometry& g, const float* m, const sproj_chunks* chunks, const std::vector<int>& lists,
              const std::vector<int>& sizes);
  bool empty() const { return _images.empty(); }
  sproj_image* const* images() const { return _images.data(); }
  int count() const { return static_cast<int>(_images.size()); }
  //! unregisters the images and the factors (each waits for the tasks that use it)
  void release();

private:
  sproj_proj* _m = nullptr;
  std::vector<sproj_image*> _images;
};

//! What an objective function registered with starproj for its reconstruction (data, factors, events, models):
//! released after the reconstruction that uses it.
struct StarprojReconInputs
{
  virtual ~StarprojReconInputs() = default;
  //! STIR's sensitivities in starproj's order, when the reconstruction takes them as its own (read from files)
  std::vector<StarprojFloats> given_sensitivities;
  //! the subsets' sensitivities submitted ahead of the data (sensitivities computed, not read)
  StarprojEarlySensitivities early_sensitivities;
};

class StarprojObjectiveOnDevices
{
public:
  typedef DiscretisedDensity<3, float> TargetT;

  virtual ~StarprojObjectiveOnDevices();

  //! OSMAPOSL's update without a prior, done where the data are: estimate <- estimate * min(max(gradient plus
  //! sensitivity / sensitivity, lo), hi) for subset_num, with STIR's sensitivity of that subset: the one starproj
  //! keeps on the devices when STIR's are starproj's subset sensitivities, else STIR's image, uploaded once. The
  //! estimate is read from the host only when the devices do not hold it already; afterwards they hold the new one
  //! and the host's is stale until estimate_to_host(). Asynchronous. (Each objective function knows whether STIR's
  //! sensitivities are starproj's: it calls update() below.)
  virtual void
  multiplicative_update_on_devices(const TargetT& estimate, int subset_num, const TargetT& sensitivity, float lo, float hi)
      = 0;
  //! OSSPS's step without a prior, done where the data are: estimate <- min(max(estimate + ((subset gradient *
  //! num_scale) / denominator) * step, lo), hi), the subset gradient being the one compute_sub_gradient gives
  //! (starproj's subset gradient, without the sensitivity), denominator STIR's image (positive), uploaded once. The
  //! estimate is read and left as by multiplicative_update_on_devices. Asynchronous.
  void additive_update_on_devices(const TargetT& estimate, int subset_num, const TargetT& denominator, float num_scale,
                                  float step, float lo, float hi);
  //! true while the devices hold a newer estimate than the host
  bool estimate_on_devices() const { return _estimate_on_devices; }
  //! brings the devices' estimate home (waits); the host's is then the current one
  void estimate_to_host(TargetT& estimate);

  //! seconds spent in set_up's parts and in each kind of call, for verbosity 2 and the benchmarks
  const StarprojStepTimes& step_times() const { return _times; }
  //! the objective function's "verbosity" key (1: also the memory held at the end of each iteration)
  virtual int starproj_verbosity() const = 0;

protected:
  explicit StarprojObjectiveOnDevices(const char* who);

  //! the resident images for a geometry (after release(); rim: STIR's truncation, -1 for none)
  void make_images(const std::shared_ptr<StarprojGeometry>& geometry, int rim);
  //! takes the reconstruction built on the images' x (of num_subsets subsets) and the inputs it uses;
  //! own_sensitivities: STIR's subset sensitivities are the reconstruction's (computed by it, or given to it), so
  //! updates may use its own
  void adopt(sproj_recon* recon, int num_subsets, std::unique_ptr<StarprojReconInputs> inputs, bool own_sensitivities);
  //! the reconstruction first, then its inputs, the images and the geometry
  void release();
  bool is_set_up() const { return _recon != nullptr; }
  sproj_image* resident_x() const { return _x; }
  const std::shared_ptr<StarprojGeometry>& geometry() const { return _geometry; }

  //! the calls of STIR's objective functions (add_sensitivity and approximate as STIR's; values and products with
  //! STIR's signs: the log-likelihood, its gradient, its Hessian times input added into output)
  void gradient(TargetT& gradient, const TargetT& estimate, int subset, bool add_sensitivity);
  double objective_value(const TargetT& estimate, int subset);
  void add_sensitivity(TargetT& sensitivity, int subset) const;
  void add_hessian_times(TargetT& output, const TargetT* estimate, const TargetT& input, int subset, bool approximate) const;
  //! OSMAPOSL's update; use_own: divide by the reconstruction's own subset sensitivity
  void update(const TargetT& estimate, int subset, const TargetT& sensitivity, float lo, float hi, bool use_own);

  //! whether the sensitivities STIR holds are the reconstruction's own (set by adopt)
  bool own_sensitivities() const { return _own_sensitivities; }
  StarprojStepTimes& times() const { return _times; }
  int copy_threads() const { return _copy_threads; }

private:
  struct Uploaded
  {
    const void* stir_image;
    std::unique_ptr<StarprojHostBuffer> buffer;
    sproj_image* img;
  };
  const char* _who;
  std::shared_ptr<StarprojGeometry> _geometry;
  std::unique_ptr<StarprojHostBuffer> _x_buffer, _v_buffer, _out_buffer;
  int _num_subsets = 0;
  // the subset whose sensitivity add_sensitivity copied ahead into _sens_ahead_img (out or v; -1: none), until an
  // image is written there
  mutable int _sens_ahead = -1;
  mutable sproj_image* _sens_ahead_img = nullptr;
  sproj_image *_x = nullptr, *_v = nullptr, *_out = nullptr;
  std::vector<Uploaded> _uploaded; // resident copies of STIR images (resident_copy)
  sproj_recon* _recon = nullptr;
  std::unique_ptr<StarprojReconInputs> _inputs;
  int _rim = -1;
  int _copy_threads = 0;
  bool _own_sensitivities = false;
  mutable bool _estimate_on_devices = false; // the resident x holds an estimate newer than the caller's
  mutable std::mutex _lock;                  // one call at a time on the resident images
  mutable StarprojStepTimes _times;

  void check_set_up(const char* what) const;
  //! copies a STIR image into one of the resident images (waiting for pending tasks that use it)
  void load(const TargetT& image, sproj_image* img, float* buffer) const;
  //! the resident out, about to be written: a sensitivity copied ahead into it is gone
  sproj_image* written_out() const;
  //! adds scale times a host array in starproj's order to a STIR image (zero outside the kept cylinder)
  void add_array(TargetT& image, const float* values, float scale) const;
  //! the resident copy of a STIR image the caller never writes again (a sensitivity, a denominator): uploaded with
  //! the first update that reads it
  sproj_image* resident_copy(const TargetT& image);
};

END_NAMESPACE_STIR

#endif
