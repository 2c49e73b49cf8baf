// SPDX-License-Identifier: Apache-2.0
// Host memory GPUs copy from directly: pinned buffers and pinned ranges of a caller's arrays (StarprojHostMemory.h).

#include "stir_starproj/StarprojHostMemory.h"

#include "stir_starproj/StarprojRuntime.h"

#include "stir/warning.h"

#include <algorithm>
#include <string>

START_NAMESPACE_STIR

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

END_NAMESPACE_STIR
