// SPDX-License-Identifier: Apache-2.0
// Copies between STIR's images and starproj's image arrays (starproj's order, STIR's rim truncation), on every core.
#ifndef STIR_STARPROJ_STARPROJIMAGECOPY_H
#define STIR_STARPROJ_STARPROJIMAGECOPY_H

#include "stir/common.h"

#include <string>

START_NAMESPACE_STIR

template <int num_dimensions, class elemT>
class DiscretisedDensity;

//! How the image copies went on the threads (OpenMP), summed over copies: reported with "verbosity" 2.
struct StarprojCopyStats
{
  int threads = 0;
  double latest_start_s = 0, latest_end_s = 0, wall_s = 0; // per copy: the last thread's start and end, the whole
  long calls = 0;
  void report(const std::string& who) const;
};

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

//! Adds scale times a float array in starproj's order to a STIR image, on every core, leaving what STIR's
//! truncate_rim(image, rim) zeroes as it is (rim >= 0): image + scale * (the array copied with starproj_array_to_image).
void starproj_array_add_to_image(const float* data, float scale, DiscretisedDensity<3, float>& image, int rim = -1, int threads = 0);

END_NAMESPACE_STIR

#endif
