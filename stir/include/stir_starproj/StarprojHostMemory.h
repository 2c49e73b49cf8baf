// SPDX-License-Identifier: Apache-2.0
// Host memory GPUs copy from directly (starproj's pinned memory): the images' buffers and pinned projection values.
#ifndef STIR_STARPROJ_STARPROJHOSTMEMORY_H
#define STIR_STARPROJ_STARPROJHOSTMEMORY_H

#include "stir/common.h"

#include <cstddef>
#include <cstdint>

START_NAMESPACE_STIR

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

END_NAMESPACE_STIR

#endif
