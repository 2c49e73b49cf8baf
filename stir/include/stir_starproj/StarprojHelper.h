// SPDX-License-Identifier: Apache-2.0
/*
  Shared pieces of the "Starproj" projector pair (stir/ in starproj's repository): the settings users give in .par
  files, the starproj runtime (StarPU, started once per process), and the geometry of one set_up: the image
  description in starproj's conventions and the LOR set of the projection data, registered once, with one chunk
  per viewgram.
*/
#ifndef STIR_STARPROJ_STARPROJHELPER_H
#define STIR_STARPROJ_STARPROJHELPER_H

#include "stir/common.h"
#include "stir/shared_ptr.h"

#include <starproj.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

START_NAMESPACE_STIR

class KeyParser;
class ProjDataInfo;
template <int num_dimensions, class elemT>
class DiscretisedDensity;

//! Turns a starproj status into a STIR error (stir::error) carrying starproj's message.
void starproj_check(int status, const char* what);

//! What users set in .par files, the same keys for the forward and back projector and the pair.
struct StarprojSettings
{
  std::string devices = "gpu"; //!< gpu (falls back to CPU cores when StarPU drives no GPU), cpu or any
  std::string scheduler;       //!< StarPU scheduler; empty: starproj's choice
  int verbosity = 0;           //!< 0 quiet, 1 workers and scheduler, 2 also per-set_up information and times
  int num_cpu_workers = -1;    //!< -1: starproj's default
  int num_gpus = -1;           //!< -1: every GPU StarPU finds
  bool restrict_to_cylindrical_FOV = true;

  void add_keys(KeyParser& parser);
  //! false (with a warning) when a value is invalid
  bool check() const;
};

//! starproj's runtime: started by the first projector that needs it, stopped when the last one is gone.
class StarprojRuntime
{
public:
  static std::shared_ptr<StarprojRuntime> acquire(const StarprojSettings& settings);
  ~StarprojRuntime();
  //! sets the kind of worker projection tasks go to (call outside parallel regions)
  void use_devices(const std::string& devices, int verbosity);

  StarprojRuntime(const StarprojRuntime&) = delete;
  StarprojRuntime& operator=(const StarprojRuntime&) = delete;

private:
  StarprojRuntime() = default;
  bool _started_here = false;
};

//! The image and LOR geometry of one set_up, registered with starproj once.
/*!
  Coordinates follow STIR's parallelproj pair, so that both pairs project the same: STIR's image index order (z,y,x)
  is starproj's [n0][n1][n2]; LOR endpoints are where STIR's LOR (ProjDataInfo::get_LOR) meets the scanner's FOV
  cylinder, in STIR's gantry-centred coordinates (z,y,x); the image origin is the centre of its first voxel in the
  same system; lengths are in units of the x voxel size (STIR projectors work in "pixel units").

  LORs are stored [segment][view][axial position][tangential position], so that each viewgram is one range of the
  set and one chunk of the chunking (chunk index from chunk_of()). For TOF data the endpoints are swapped (xstart at
  STIR's second point), so that starproj's TOF bin b is STIR's timing position min_tof_pos_num + b.
*/
class StarprojGeometry
{
public:
  //! upload: copy every LOR to the GPUs now (projectors and sinogram objective functions, which project them at every
  //! call); a listmode objective function projects its sinogram's LORs once, for the sensitivities, and leaves it to
  //! those projections
  StarprojGeometry(const shared_ptr<const ProjDataInfo>& proj_data_info_sptr,
                   const DiscretisedDensity<3, float>& density_info,
                   const StarprojSettings& settings,
                   bool upload = true);
  ~StarprojGeometry();
  StarprojGeometry(const StarprojGeometry&) = delete;
  StarprojGeometry& operator=(const StarprojGeometry&) = delete;

  //! true when this geometry was made for the same projection data description and image characteristics
  bool matches(const ProjDataInfo& proj_data_info, const DiscretisedDensity<3, float>& density_info) const;

  int chunk_of(int segment_num, int view_num) const;
  int64_t first_lor(int chunk) const { return _first_lor[chunk]; }
  //! index of the LOR of (segment, view, axial position, tangential position), which must be in the data
  int64_t lor_index(int segment_num, int view_num, int axial_pos_num, int tangential_pos_num) const
  {
    return _first_lor[chunk_of(segment_num, view_num)] + int64_t(axial_pos_num - min_axial_pos_num(segment_num)) * _num_tang
           + (tangential_pos_num - _min_tang);
  }
  //! the endpoints of LOR lor (3 floats each, starproj's units and axis order)
  const float* lor_start(int64_t lor) const { return &_xstart[3 * lor]; }
  const float* lor_end(int64_t lor) const { return &_xend[3 * lor]; }
  int num_chunks() const { return static_cast<int>(_first_lor.size()); }
  int64_t num_lors() const { return _num_lors; }
  int min_axial_pos_num(int segment_num) const;
  int min_tangential_pos_num() const { return _min_tang; }
  int num_tangential_poss() const { return _num_tang; }

  bool is_tof() const { return _num_tof_bins > 1; }
  int num_tof_bins() const { return _num_tof_bins; }
  int min_tof_pos_num() const { return _min_tof_pos; }
  const sproj_tof* tof() const { return _tof; }

  //! rim (in voxels) truncated by "restrict to cylindrical FOV", as STIR's parallelproj pair computes it
  int rim_truncation() const { return _rim_truncation; }

  const int* dims() const { return _dims; }
  const float* voxel_size() const { return _voxel_size; }
  const float* origin() const { return _origin; }
  int64_t num_voxels() const { return int64_t(_dims[0]) * _dims[1] * _dims[2]; }
  sproj_lors* lors() const { return _lors; }
  sproj_chunks* chunks() const { return _chunks; }
  const std::shared_ptr<StarprojRuntime>& runtime() const { return _runtime; }

private:
  std::shared_ptr<StarprojRuntime> _runtime; // declared first: destroyed last
  shared_ptr<const ProjDataInfo> _proj_data_info_sptr;
  shared_ptr<const DiscretisedDensity<3, float>> _density_info_sptr;
  int _dims[3];
  float _voxel_size[3];
  float _origin[3];
  int _rim_truncation = 0;
  int _min_segment = 0, _max_segment = 0, _min_view = 0, _num_views = 0, _min_tang = 0, _num_tang = 0;
  std::vector<int> _min_axial; // per segment (index segment - _min_segment)
  std::vector<int64_t> _first_lor;
  int64_t _num_lors = 0;
  int _num_tof_bins = 1;
  int _min_tof_pos = 0;
  std::vector<float> _xstart, _xend;
  sproj_lors* _lors = nullptr;
  sproj_chunks* _chunks = nullptr;
  sproj_tof* _tof = nullptr;
};

//! A float buffer in memory GPUs copy from directly (starproj's pinned memory), for the images the pair registers.
class StarprojHostBuffer
{
public:
  explicit StarprojHostBuffer(int64_t num_floats);
  ~StarprojHostBuffer();
  StarprojHostBuffer(const StarprojHostBuffer&) = delete;
  StarprojHostBuffer& operator=(const StarprojHostBuffer&) = delete;
  float* data() const { return _data; }

private:
  float* _data = nullptr;
  std::size_t _bytes = 0;
};

//! Pins a caller's array (the projection values) while it lives, when it is at most max_bytes (pinning costs about
//! 0.1 s per GB once, and makes every copy of a viewgram's values to and from a GPU a direct one).
class StarprojPinnedRange
{
public:
  StarprojPinnedRange(void* ptr, std::size_t bytes, std::size_t max_bytes = std::size_t(2) << 30);
  ~StarprojPinnedRange();
  StarprojPinnedRange(const StarprojPinnedRange&) = delete;
  StarprojPinnedRange& operator=(const StarprojPinnedRange&) = delete;

private:
  void* _ptr = nullptr;
  std::size_t _bytes = 0;
};

//! How the image copies went on the threads (OpenMP), summed over copies: reported with "verbosity" 2.
struct StarprojCopyStats
{
  int threads = 0;
  double latest_start_s = 0, latest_end_s = 0, wall_s = 0; // per copy: the last thread's start and end, the whole
  long calls = 0;
  void report(const std::string& who) const;
};

//! OpenMP threads for host loops beside a running starproj: the cores StarPU's GPU workers do not poll on (0: OpenMP's
//! default, when StarPU drives no GPU).
int starproj_host_threads();

//! Copies a STIR image into a float array in starproj's order, on every core; with rim >= 0, zeroing what STIR's
//! truncate_rim(image, rim) zeroes (the voxels outside the cylinder it keeps). threads: OpenMP threads (0: OpenMP's
//! default); stats: adds how the copy went.
void starproj_image_to_array(const DiscretisedDensity<3, float>& image,
                             float* data,
                             int rim = -1,
                             int threads = 0,
                             StarprojCopyStats* stats = nullptr);
//! The other way, with the same truncation.
void starproj_array_to_image(const float* data,
                             DiscretisedDensity<3, float>& image,
                             int rim = -1,
                             int threads = 0,
                             StarprojCopyStats* stats = nullptr);

//! Seconds spent in the steps of the per-image calls (set_input, start_accumulating_in_new_target, get_output),
//! reported with "verbosity" 2 when the projector goes.
class StarprojStepTimes
{
public:
  //! adds the time since the last mark (or since start()) to step `name`
  void start();
  void mark(const char* name);
  void report(const std::string& who) const;

private:
  double _last = 0;
  std::vector<std::pair<std::string, std::pair<double, long>>> _steps;
};

//! Seconds the related-viewgrams calls spend in each of their parts, summed over the calls of all threads (STIR's
//! OpenMP threads call side by side), reported with "verbosity" 2 when the projector goes.
class StarprojCallTimes
{
public:
  enum Part
  {
    submit, //!< submitting projections
    sync,   //!< sproj_proj_sync: forward, waiting for the projections and their values; back, for the host copy
    values, //!< copying values between STIR's viewgrams and starproj's array
    num_parts
  };
  StarprojCallTimes();
  void add(Part part, double seconds);
  void report(const std::string& who) const;

private:
  std::atomic<long long> _ns[num_parts];
  std::atomic<long> _calls[num_parts];
};

//! Measures consecutive parts of one call: lap(part) adds the time since the previous lap (or construction).
class StarprojCallClock
{
public:
  explicit StarprojCallClock(StarprojCallTimes& times);
  void lap(StarprojCallTimes::Part part);

private:
  StarprojCallTimes& _times;
  double _last;
};

//! What a projector keeps registered between one set_up and the next: its image buffer (pinned), its projection
//! values (one float per LOR and TOF bin, pinned when at most 2 GB), their starproj objects, and the times of its
//! per-image steps and of its related-viewgrams calls (reported on destruction with verbosity 2, under the name `who`).
struct StarprojResident
{
  std::shared_ptr<StarprojGeometry> geometry;
  StarprojHostBuffer image;
  std::vector<float> values; // [lor] or, for TOF, [lor][tof bin]
  StarprojPinnedRange pinned_values;
  sproj_image* img = nullptr;
  sproj_proj* proj = nullptr;
  StarprojStepTimes times;
  StarprojCallTimes call_times;
  StarprojCopyStats copy_stats;
  int copy_threads = 0; //!< threads of the image copies (0: OpenMP's default)
  int verbosity = 0;

  StarprojResident(const std::shared_ptr<StarprojGeometry>& g, const char* who);
  ~StarprojResident();
  StarprojResident(const StarprojResident&) = delete;
  StarprojResident& operator=(const StarprojResident&) = delete;

private:
  const char* _who;
};

END_NAMESPACE_STIR

#endif
