// SPDX-License-Identifier: Apache-2.0
// Copies between STIR's images and starproj's image arrays, with STIR's rim truncation, on the host's cores
// (StarprojImageCopy.h).

#include "stir_starproj/StarprojImageCopy.h"

#include "stir_starproj/StarprojTimes.h"

#include "stir/DiscretisedDensity.h"
#include "stir/error.h"
#include "stir/info.h"

#ifdef _OPENMP
#  include <omp.h>
#endif

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

START_NAMESPACE_STIR

namespace
{
// The index ranges of a regular image and, per row y, the x range truncate_rim keeps (STIR's rule: a voxel goes when
// (xm - x)^2 + (ym - y)^2 >= r^2, with xm, ym the middle indices and r = (x_last - x_first) / 2 - rim, in integers).
struct ImageRows
{
  int z_first, z_last, y_first, y_last, x_first, x_last;
  explicit ImageRows(const DiscretisedDensity<3, float>& image)
  {
    BasicCoordinate<3, int> lo, hi;
    if (!image.get_regular_range(lo, hi))
      error("Starproj: the image must have a regular index range");
    z_first = lo[1], y_first = lo[2], x_first = lo[3], z_last = hi[1], y_last = hi[2], x_last = hi[3];
  }
  int nx() const { return x_last - x_first + 1; }
  int ny() const { return y_last - y_first + 1; }
  // [first, last] of x kept in row y (first > last: none); the whole row without truncation
  void kept(int y, int rim, int& first, int& last) const
  {
    first = x_first, last = x_last;
    if (rim < 0)
      return;
    const long r = (x_last - x_first) / 2 - rim, ym = (y_first + y_last) / 2, xm = (x_first + x_last) / 2;
    const long dy2 = (ym - y) * (ym - y), room = r * r - dy2;
    first = x_last + 1, last = x_last;
    if (room <= 0)
      return;
    for (int x = x_first; x <= x_last; ++x)
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
  const int nx = g.nx(), ny = g.ny(), nrows = (g.z_last - g.z_first + 1) * ny;
  std::vector<std::pair<int, int>> kept(ny); // per y: first kept x and count, relative to x_first
  for (int y = g.y_first; y <= g.y_last; ++y)
    {
      int first, last;
      g.kept(y, rim, first, last);
      kept[y - g.y_first] = first <= last ? std::make_pair(first - g.x_first, last - first + 1) : std::make_pair(0, 0);
    }
  // blocks of rows handed out as threads come: a thread that shares its core (StarPU's GPU worker polls on one)
  // delays only its block, not a fixed share of the image
  const double t0 = stats ? starproj_seconds_now() : 0.0;
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
            latest_start = std::max(latest_start, starproj_seconds_now() - t0);
            started = true;
          }
        const int z = g.z_first + row / ny, y = g.y_first + row % ny;
        const std::pair<const float*, float*> ends = rows(z, y, row);
        const int first = kept[y - g.y_first].first, count = kept[y - g.y_first].second;
        std::fill(ends.second, ends.second + first, 0.F);
        std::copy(ends.first + first, ends.first + first + count, ends.second + first);
        std::fill(ends.second + first + count, ends.second + nx, 0.F);
      }
    if (stats)
      latest_end = std::max(latest_end, starproj_seconds_now() - t0);
  }
  if (stats)
    {
      stats->threads = threads;
      stats->latest_start_s += latest_start;
      stats->latest_end_s += latest_end;
      stats->wall_s += starproj_seconds_now() - t0;
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
        return std::pair<const float*, float*>(&image[z][y][g.x_first], data + int64_t(row) * g.nx());
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
        return std::pair<const float*, float*>(data + int64_t(row) * g.nx(), &image[z][y][g.x_first]);
      },
      threads, stats);
}

void
starproj_array_add_to_image(const float* data, float scale, DiscretisedDensity<3, float>& image, int rim, int threads)
{
  const ImageRows g(image);
  const int nx = g.nx(), ny = g.ny(), nrows = (g.z_last - g.z_first + 1) * ny;
  std::vector<std::pair<int, int>> kept(ny); // per y: first kept x and one past the last, relative to x_first
  for (int y = g.y_first; y <= g.y_last; ++y)
    {
      int first, last;
      g.kept(y, rim, first, last);
      kept[y - g.y_first] = first <= last ? std::make_pair(first - g.x_first, last - g.x_first + 1) : std::make_pair(0, 0);
    }
#ifdef _OPENMP
#  pragma omp parallel for schedule(static) num_threads(threads > 0 ? threads : omp_get_max_threads())
#else
  (void)threads;
#endif
  for (int row = 0; row < nrows; ++row)
    {
      const int z = g.z_first + row / ny, y = g.y_first + row % ny;
      float* to = &image[z][y][g.x_first];
      const float* from = data + int64_t(row) * nx;
      for (int x = kept[y - g.y_first].first; x < kept[y - g.y_first].second; ++x)
        to[x] = to[x] + scale * from[x];
    }
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

END_NAMESPACE_STIR
