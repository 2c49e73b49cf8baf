// SPDX-License-Identifier: Apache-2.0
// Settings, runtime and geometry shared by the "Starproj" forward and back projectors.

#include "stir_starproj/StarprojHelper.h"

#include "stir/Bin.h"
#include "stir/DiscretisedDensity.h"
#include "stir/KeyParser.h"
#include "stir/LORCoordinates.h"
#include "stir/ProjDataInfoCylindricalNoArcCorr.h"
#include "stir/Scanner.h"
#include "stir/TOF_conversions.h"
#include "stir/VoxelsOnCartesianGrid.h"
#include "stir/error.h"
#include "stir/info.h"
#include "stir/warning.h"

#ifdef _OPENMP
#  include <omp.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

START_NAMESPACE_STIR

void
starproj_check(int status, const char* what)
{
  if (status == SPROJ_OK)
    return;
  // sproj_last_error() is per thread: read it before anything else can call starproj
  const std::string message = sproj_last_error();
  error(std::string("Starproj: ") + what + " failed: " + (message.empty() ? sproj_strerror(status) : message) + " ("
        + sproj_strerror(status) + ")");
}

void
StarprojSettings::add_keys(KeyParser& parser)
{
  parser.add_key("devices", &devices);
  parser.add_key("scheduler", &scheduler);
  parser.add_key("verbosity", &verbosity);
  parser.add_key("number of CPU workers", &num_cpu_workers);
  parser.add_key("number of GPUs", &num_gpus);
  parser.add_key("restrict to cylindrical FOV", &restrict_to_cylindrical_FOV);
}

bool
StarprojSettings::check() const
{
  if (devices != "gpu" && devices != "cpu" && devices != "any")
    {
      warning("Starproj: 'devices' must be gpu, cpu or any, not '" + devices + "'");
      return false;
    }
  if (num_cpu_workers < -1 || num_gpus < -1)
    {
      warning("Starproj: 'number of CPU workers' and 'number of GPUs' must be -1 (default) or >= 0");
      return false;
    }
  return true;
}

// ---- runtime ---------------------------------------------------------------------------------------------

std::shared_ptr<StarprojRuntime>
StarprojRuntime::acquire(const StarprojSettings& settings)
{
  static std::mutex mutex;
  static std::weak_ptr<StarprojRuntime> current;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto runtime = current.lock())
    return runtime;
  std::shared_ptr<StarprojRuntime> runtime(new StarprojRuntime);
  if (!sproj_is_initialized())
    {
      sproj_config cfg;
      sproj_config_init(&cfg);
      cfg.ncpu = settings.num_cpu_workers;
      cfg.ncuda = settings.num_gpus;
      cfg.sched = settings.scheduler.empty() ? nullptr : settings.scheduler.c_str();
      cfg.verbose = settings.verbosity > 0 ? 1 : 0;
      // Projections on GPUs only: no CPU workers at all. StarPU's idle CPU workers poll for tasks, and on the cores
      // STIR's OpenMP threads use they took half of every host loop (the image copies, STIR's own arithmetic).
      // Without a GPU, starproj starts again with its usual CPU workers.
      const bool gpus_only = settings.devices == "gpu" && settings.num_cpu_workers == -1 && settings.num_gpus != 0;
      if (gpus_only)
        cfg.ncpu = 0;
      int status = sproj_init(&cfg);
      if (gpus_only && (status != SPROJ_OK || sproj_num_gpus() == 0))
        {
          if (status == SPROJ_OK)
            starproj_check(sproj_shutdown(), "sproj_shutdown");
          cfg.ncpu = -1;
          status = sproj_init(&cfg);
        }
      starproj_check(status, "sproj_init");
      runtime->_started_here = true;
      if (settings.verbosity > 0)
        info("Starproj: " + std::to_string(sproj_num_cpu_workers()) + " CPU workers, " + std::to_string(sproj_num_gpus())
             + " GPUs, scheduler " + sproj_scheduler_name());
    }
  current = runtime;
  return runtime;
}

StarprojRuntime::~StarprojRuntime()
{
  if (_started_here)
    {
      const int status = sproj_shutdown();
      if (status != SPROJ_OK)
        warning(std::string("Starproj: sproj_shutdown failed: ") + sproj_last_error());
    }
}

void
StarprojRuntime::use_devices(const std::string& devices, int verbosity)
{
  unsigned mask = SPROJ_DEVICE_CPU;
  if (devices == "any")
    mask = sproj_num_gpus() > 0 ? SPROJ_DEVICE_ANY : SPROJ_DEVICE_CPU;
  else if (devices == "gpu")
    {
      if (sproj_num_gpus() > 0)
        mask = SPROJ_DEVICE_CUDA;
      else if (verbosity > 0)
        info("Starproj: no GPU, projecting on CPU cores");
    }
  starproj_check(sproj_set_devices(mask), "sproj_set_devices");
}

// ---- geometry --------------------------------------------------------------------------------------------

namespace
{
// x voxel size: STIR's projectors give line integrals in units of it
float
length_unit(const VoxelsOnCartesianGrid<float>& image)
{
  return image.get_voxel_size()[3];
}
} // namespace

StarprojGeometry::StarprojGeometry(const shared_ptr<const ProjDataInfo>& proj_data_info_sptr,
                                   const DiscretisedDensity<3, float>& density_info,
                                   const StarprojSettings& settings,
                                   bool upload)
    : _proj_data_info_sptr(proj_data_info_sptr->create_shared_clone()),
      _density_info_sptr(density_info.get_empty_copy())
{
  const auto* image = dynamic_cast<const VoxelsOnCartesianGrid<float>*>(&density_info);
  if (!image)
    error("Starproj: the image must be a VoxelsOnCartesianGrid");
  const ProjDataInfo& pdi = *_proj_data_info_sptr;
  if (!dynamic_cast<const ProjDataInfoCylindricalNoArcCorr*>(&pdi))
    error("Starproj: only cylindrical scanners without arc correction (ProjDataInfoCylindricalNoArcCorr) are supported");
  _runtime = StarprojRuntime::acquire(settings);

  // image: STIR's (z,y,x) order is starproj's (n0,n1,n2); lengths in x-voxel units
  const float unit = length_unit(*image);
  const float scale = 1.F / unit;
  const auto lengths = image->get_lengths();
  const auto voxel_size = image->get_voxel_size();
  BasicCoordinate<3, int> min_index, max_index;
  if (!image->get_regular_range(min_index, max_index))
    error("Starproj: the image must have a regular index range");
  // centre of the first voxel, moved from STIR's image coordinates (z = 0 at the first plane) to the gantry-centred
  // coordinates of ProjDataInfo::get_LOR (z = 0 half-way between the first and last planes)
  auto first_centre = image->get_physical_coordinates_for_indices(min_index);
  first_centre[1] -= (image->get_min_index() + image->get_max_index()) / 2.F * voxel_size[1];
  for (int d = 0; d < 3; ++d)
    {
      _dims[d] = lengths[d + 1];
      _voxel_size[d] = voxel_size[d + 1] * scale;
      _origin[d] = first_centre[d + 1] * scale;
    }
  // as STIR's parallelproj pair: the image half-width in x-voxel units against the inner radius in mm (so in
  // practice no extra rim: the inscribed circle of the image is kept)
  {
    const float inner_radius = pdi.get_scanner_sptr()->get_inner_ring_radius();
    const float half_width = _voxel_size[2] * _dims[2] / 2;
    _rim_truncation = static_cast<int>(std::max((half_width - inner_radius) / _voxel_size[2], 0.F));
  }

  // sinogram layout: [segment][view][axial][tangential], a viewgram per chunk
  _min_segment = pdi.get_min_segment_num();
  _max_segment = pdi.get_max_segment_num();
  _min_view = pdi.get_min_view_num();
  _num_views = pdi.get_num_views();
  _min_tang = pdi.get_min_tangential_pos_num();
  _num_tang = pdi.get_num_tangential_poss();
  _num_tof_bins = pdi.get_num_tof_poss();
  _min_tof_pos = pdi.get_min_tof_pos_num();
  const bool tof = _num_tof_bins > 1;
  std::vector<int64_t> counts;
  for (int seg = _min_segment; seg <= _max_segment; ++seg)
    {
      _min_axial.push_back(pdi.get_min_axial_pos_num(seg));
      const int64_t per_view = int64_t(pdi.get_num_axial_poss(seg)) * _num_tang;
      for (int v = 0; v < _num_views; ++v)
        {
          _first_lor.push_back(_num_lors);
          counts.push_back(per_view);
          _num_lors += per_view;
        }
    }
  _xstart.assign(3 * _num_lors, 0.F);
  _xend.assign(3 * _num_lors, 0.F);
  const float fov_radius = pdi.get_scanner_sptr()->get_max_FOV_radius();
  const int num_chunks = static_cast<int>(_first_lor.size());
#ifdef _OPENMP
#  pragma omp parallel for schedule(dynamic)
#endif
  for (int c = 0; c < num_chunks; ++c)
    {
      const int seg = _min_segment + c / _num_views;
      const int view = _min_view + c % _num_views;
      const int num_axial = pdi.get_num_axial_poss(seg);
      int64_t lor = _first_lor[c];
      for (int a = 0; a < num_axial; ++a)
        for (int t = 0; t < _num_tang; ++t, ++lor)
          {
            const Bin bin(seg, view, _min_axial[seg - _min_segment] + a, _min_tang + t);
            LORInAxialAndNoArcCorrSinogramCoordinates<float> sino_lor;
            pdi.get_LOR(sino_lor, bin);
            LORAs2Points<float> points;
            float* s = &_xstart[3 * lor];
            float* e = &_xend[3 * lor];
            // a LOR that misses the FOV keeps length 0 and projects to 0
            if (sino_lor.get_intersections_with_cylinder(points, fov_radius) != Succeeded::yes)
              continue;
            const CartesianCoordinate3D<float>& first = tof ? points.p2() : points.p1();
            const CartesianCoordinate3D<float>& second = tof ? points.p1() : points.p2();
            for (int d = 0; d < 3; ++d)
              {
                s[d] = first[d + 1] * scale;
                e[d] = second[d + 1] * scale;
              }
          }
    }
  starproj_check(sproj_lors_register(&_lors, _xstart.data(), _xend.data(), _num_lors), "sproj_lors_register");
  const int status = sproj_chunks_create_ranges(&_chunks, _lors, num_chunks, _first_lor.data(), counts.data());
  if (status != SPROJ_OK)
    {
      sproj_lors_unregister(_lors);
      _lors = nullptr;
      starproj_check(status, "sproj_chunks_create_ranges");
    }
  if (tof)
    {
      sproj_tof_params par;
      const Bin bin(0, 0, 0, 0, 0);
      par.bin_width = pdi.get_sampling_in_k(bin) * scale;
      par.num_bins = _num_tof_bins;
      par.num_sigmas = 4.F; // STIR's parallelproj pair uses 4 sigmas
      par.sigma = static_cast<float>(tof_delta_time_to_mm(pdi.get_scanner_sptr()->get_timing_resolution()) / 2.355) * scale;
      par.center_offset = 0.F;
      const int tof_status = sproj_tof_register(&_tof, &par, nullptr, nullptr, nullptr);
      if (tof_status != SPROJ_OK)
        {
          sproj_chunks_destroy(_chunks);
          sproj_lors_unregister(_lors);
          _chunks = nullptr;
          _lors = nullptr;
          starproj_check(tof_status, "sproj_tof_register");
        }
    }
  if (upload)
    starproj_check(sproj_lors_upload(_lors, _chunks, SPROJ_ALL_CHUNKS, SPROJ_ALL_GPUS), "sproj_lors_upload");
  if (settings.verbosity > 1)
    info("Starproj: registered " + std::to_string(_num_lors) + " LORs in " + std::to_string(num_chunks)
         + " viewgrams, image " + std::to_string(_dims[0]) + "x" + std::to_string(_dims[1]) + "x" + std::to_string(_dims[2])
         + (tof ? ", " + std::to_string(_num_tof_bins) + " TOF bins" : std::string()));
}

StarprojGeometry::~StarprojGeometry()
{
  if (_tof)
    sproj_tof_unregister(_tof);
  if (_chunks)
    sproj_chunks_destroy(_chunks);
  if (_lors && sproj_lors_unregister(_lors) != SPROJ_OK)
    warning(std::string("Starproj: sproj_lors_unregister failed: ") + sproj_last_error());
}

bool
StarprojGeometry::matches(const ProjDataInfo& proj_data_info, const DiscretisedDensity<3, float>& density_info) const
{
  return *_proj_data_info_sptr == proj_data_info && _density_info_sptr->has_same_characteristics(density_info);
}

int
StarprojGeometry::chunk_of(int segment_num, int view_num) const
{
  if (segment_num < _min_segment || segment_num > _max_segment || view_num < _min_view || view_num >= _min_view + _num_views)
    error("Starproj: segment " + std::to_string(segment_num) + ", view " + std::to_string(view_num)
          + " is not in the projection data the projector was set up with");
  return (segment_num - _min_segment) * _num_views + (view_num - _min_view);
}

int
StarprojGeometry::min_axial_pos_num(int segment_num) const
{
  return _min_axial[segment_num - _min_segment];
}

namespace
{
double
seconds_now()
{
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
} // namespace

// ---- host buffers and copies -----------------------------------------------------------------------------------

StarprojHostBuffer::StarprojHostBuffer(int64_t num_floats)
    : _bytes(static_cast<std::size_t>(num_floats > 0 ? num_floats : 1) * sizeof(float))
{
  void* p = nullptr;
  starproj_check(sproj_malloc_pinned(&p, _bytes), "sproj_malloc_pinned");
  _data = static_cast<float*>(p);
  std::fill(_data, _data + _bytes / sizeof(float), 0.F);
}

StarprojHostBuffer::~StarprojHostBuffer()
{
  if (_data && sproj_free_pinned(_data, _bytes) != SPROJ_OK)
    warning(std::string("Starproj: sproj_free_pinned failed: ") + sproj_last_error());
}

StarprojPinnedRange::StarprojPinnedRange(void* ptr, std::size_t bytes, std::size_t max_bytes)
{
  // pinning is an optimisation: an array that could not be pinned is used as it is
  if (ptr && bytes > 0 && bytes <= max_bytes && sproj_pin(ptr, bytes) == SPROJ_OK)
    {
      _ptr = ptr;
      _bytes = bytes;
    }
}

StarprojPinnedRange::~StarprojPinnedRange()
{
  if (_ptr && sproj_unpin(_ptr, _bytes) != SPROJ_OK)
    warning(std::string("Starproj: sproj_unpin failed: ") + sproj_last_error());
}

namespace
{
// The index ranges of a regular image and, per row y, the x range truncate_rim keeps (STIR's rule: a voxel goes when
// (xm - x)^2 + (ym - y)^2 >= r^2, with xm, ym the middle indices and r = (xe - xs) / 2 - rim, in integers).
struct ImageRows
{
  int zs, ze, ys, ye, xs, xe;
  explicit ImageRows(const DiscretisedDensity<3, float>& image)
  {
    BasicCoordinate<3, int> lo, hi;
    if (!image.get_regular_range(lo, hi))
      error("Starproj: the image must have a regular index range");
    zs = lo[1], ys = lo[2], xs = lo[3], ze = hi[1], ye = hi[2], xe = hi[3];
  }
  int nx() const { return xe - xs + 1; }
  int ny() const { return ye - ys + 1; }
  // [first, last] of x kept in row y (first > last: none); the whole row without truncation
  void kept(int y, int rim, int& first, int& last) const
  {
    first = xs, last = xe;
    if (rim < 0)
      return;
    const long r = (xe - xs) / 2 - rim, ym = (ys + ye) / 2, xm = (xs + xe) / 2;
    const long dy2 = (ym - y) * (ym - y), room = r * r - dy2;
    first = xe + 1, last = xe;
    if (room <= 0)
      return;
    for (int x = xs; x <= xe; ++x)
      if ((xm - x) * (xm - x) < room)
        {
          first = std::min(first, x);
          last = x;
        }
  }
};

// Copies every row of a regular image between STIR's arrays and starproj's buffer (rows(z, y, row) gives the source
// and destination of a row), with truncate_rim's zeros when rim >= 0, on threads_wanted threads (0: OpenMP's
// default); stats, when given, adds how the copy went on them. The kept x range depends on y
// only: it is found once per y, and each row is then a copy of that range and zeros around it (a select per voxel,
// with the range found again for every row, ran at a fifth of the memory's speed: 7-8 ms for the mMR's 60 MB image
// on 16 cores against 1.0-1.3 ms).
template <class Rows>
void
copy_rows(const ImageRows& g, int rim, Rows rows, int threads_wanted, StarprojCopyStats* stats)
{
  const int nx = g.nx(), ny = g.ny(), nrows = (g.ze - g.zs + 1) * ny;
  std::vector<std::pair<int, int>> kept(ny); // per y: first kept x and count, relative to xs
  for (int y = g.ys; y <= g.ye; ++y)
    {
      int first, last;
      g.kept(y, rim, first, last);
      kept[y - g.ys] = first <= last ? std::make_pair(first - g.xs, last - first + 1) : std::make_pair(0, 0);
    }
  // blocks of rows handed out as threads come: a thread that shares its core (StarPU's GPU worker polls on one)
  // delays only its block, not a fixed share of the image
  const double t0 = stats ? seconds_now() : 0.0;
  int threads = 1;
  double latest_start = 0.0, latest_end = 0.0;
#ifdef _OPENMP
  const int num_threads = threads_wanted > 0 ? threads_wanted : omp_get_max_threads();
#  pragma omp parallel num_threads(num_threads) reduction(max : latest_start, latest_end)
#else
  (void)threads_wanted;
#endif
  {
#ifdef _OPENMP
#  pragma omp single nowait
    threads = omp_get_num_threads();
#endif
    bool started = false;
#ifdef _OPENMP
#  pragma omp for schedule(dynamic, 64) nowait
#endif
    for (int row = 0; row < nrows; ++row)
      {
        if (stats && !started)
          {
            latest_start = std::max(latest_start, seconds_now() - t0);
            started = true;
          }
        const int z = g.zs + row / ny, y = g.ys + row % ny;
        const std::pair<const float*, float*> ends = rows(z, y, row);
        const int first = kept[y - g.ys].first, count = kept[y - g.ys].second;
        std::fill(ends.second, ends.second + first, 0.F);
        std::copy(ends.first + first, ends.first + first + count, ends.second + first);
        std::fill(ends.second + first + count, ends.second + nx, 0.F);
      }
    if (stats)
      latest_end = std::max(latest_end, seconds_now() - t0);
  }
  if (stats)
    {
      stats->threads = threads;
      stats->latest_start_s += latest_start;
      stats->latest_end_s += latest_end;
      stats->wall_s += seconds_now() - t0;
      stats->calls += 1;
    }
}
} // namespace

void
starproj_image_to_array(
    const DiscretisedDensity<3, float>& image, float* data, int rim, int threads, StarprojCopyStats* stats)
{
  const ImageRows g(image);
  copy_rows(
      g, rim,
      [&](int z, int y, int row) {
        return std::pair<const float*, float*>(&image[z][y][g.xs], data + int64_t(row) * g.nx());
      },
      threads, stats);
}

void
starproj_array_to_image(
    const float* data, DiscretisedDensity<3, float>& image, int rim, int threads, StarprojCopyStats* stats)
{
  const ImageRows g(image);
  copy_rows(
      g, rim,
      [&](int z, int y, int row) {
        return std::pair<const float*, float*>(data + int64_t(row) * g.nx(), &image[z][y][g.xs]);
      },
      threads, stats);
}

void
StarprojCopyStats::report(const std::string& who) const
{
  if (calls == 0)
    return;
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "Starproj: %s image copies on %d threads, ms per copy: last thread started %.3f, last thread done "
                "%.3f, returned %.3f (%ld copies)",
                who.c_str(), threads, latest_start_s * 1e3 / calls, latest_end_s * 1e3 / calls, wall_s * 1e3 / calls,
                calls);
  info(buf);
}

int
starproj_host_threads()
{
  // StarPU's GPU workers poll on cores of their own: host loops leave those cores to them (with all cores, the
  // copies of the mMR image took 4-7 ms on 16 cores beside 4 GPU workers, against 1.4 ms on 15)
#ifdef _OPENMP
  const int gpu_workers = sproj_num_workers() - sproj_num_cpu_workers();
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  if (gpu_workers > 0 && cores > 0)
    return std::max(1, std::min(omp_get_max_threads(), cores - gpu_workers));
#endif
  return 0;
}

// ---- what a projector keeps registered -------------------------------------------------------------------------

StarprojResident::StarprojResident(const std::shared_ptr<StarprojGeometry>& g, const char* who)
    : geometry(g),
      image(g->num_voxels()),
      values(g->num_lors() * g->num_tof_bins(), 0.F),
      pinned_values(values.data(), values.size() * sizeof(float)),
      _who(who)
{
  copy_threads = starproj_host_threads();
  starproj_check(sproj_image_register(&img, image.data(), g->dims(), g->voxel_size(), g->origin()), "sproj_image_register");
  const int status = g->is_tof() ? sproj_proj_register_tof(&proj, values.data(), g->lors(), g->num_tof_bins())
                                 : sproj_proj_register(&proj, values.data(), g->lors());
  if (status != SPROJ_OK)
    {
      sproj_image_unregister(img);
      starproj_check(status, "sproj_proj_register");
    }
}

StarprojResident::~StarprojResident()
{
  if (verbosity > 1)
    {
      times.report(_who);
      copy_stats.report(_who);
      call_times.report(_who);
    }
  sproj_proj_unregister(proj);
  sproj_image_unregister(img);
}

// ---- step times ------------------------------------------------------------------------------------------------

void
StarprojStepTimes::start()
{
  _last = seconds_now();
}

void
StarprojStepTimes::mark(const char* name)
{
  const double t = seconds_now();
  auto it = std::find_if(_steps.begin(), _steps.end(), [&](const auto& s) { return s.first == name; });
  if (it == _steps.end())
    it = _steps.insert(_steps.end(), {name, {0.0, 0L}});
  it->second.first += t - _last;
  it->second.second += 1;
  _last = t;
}

void
StarprojStepTimes::report(const std::string& who) const
{
  if (_steps.empty())
    return;
  std::string line = "Starproj: " + who + " steps, seconds in all (calls):";
  for (const auto& s : _steps)
    {
      char buf[128];
      std::snprintf(buf, sizeof buf, " %s %.3f (%ld);", s.first.c_str(), s.second.first, s.second.second);
      line += buf;
    }
  info(line);
}

StarprojCallTimes::StarprojCallTimes()
{
  for (int p = 0; p < num_parts; ++p)
    {
      _ns[p] = 0;
      _calls[p] = 0;
    }
}

void
StarprojCallTimes::add(Part part, double seconds)
{
  _ns[part] += static_cast<long long>(seconds * 1e9);
  _calls[part] += 1;
}

void
StarprojCallTimes::report(const std::string& who) const
{
  static const char* const names[num_parts] = { "submit", "sync", "values" };
  if (_calls[values] == 0)
    return;
  std::string line = "Starproj: " + who + " related-viewgrams calls, seconds summed over threads (calls):";
  for (int p = 0; p < num_parts; ++p)
    {
      char buf[128];
      std::snprintf(buf, sizeof buf, " %s %.3f (%ld);", names[p], _ns[p] * 1e-9, static_cast<long>(_calls[p]));
      line += buf;
    }
  info(line);
}

StarprojCallClock::StarprojCallClock(StarprojCallTimes& times)
    : _times(times),
      _last(seconds_now())
{}

void
StarprojCallClock::lap(StarprojCallTimes::Part part)
{
  const double t = seconds_now();
  _times.add(part, t - _last);
  _last = t;
}

END_NAMESPACE_STIR
