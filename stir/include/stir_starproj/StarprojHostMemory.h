// SPDX-License-Identifier: Apache-2.0
// Host memory: what GPUs copy from directly (starproj's pinned memory: the images' buffers and pinned projection values),
// and arrays the set-up fills itself, whole, on the host's cores (not zeroed first).
#ifndef STIR_STARPROJ_STARPROJHOSTMEMORY_H
#define STIR_STARPROJ_STARPROJHOSTMEMORY_H

#include "stir/common.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <utility>
#include <vector>

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

//! A std::vector allocator whose resize() leaves new floats uninitialised (value-initialisation becomes default-
//! initialisation): for the LOR endpoints and per-LOR arrays the set-up writes whole on every core, where zeroing them
//! first on one thread cost as much as filling them (1.7 GB of endpoints for the mMR at span 11).
template <class T>
struct StarprojUninitialised : std::allocator<T>
{
  template <class U>
  struct rebind
  {
    typedef StarprojUninitialised<U> other;
  };
  StarprojUninitialised() = default;
  template <class U>
  StarprojUninitialised(const StarprojUninitialised<U>&) noexcept
  {}
  template <class U>
  void construct(U* p) noexcept
  {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args)
  {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

//! A float array that resize() does not zero.
typedef std::vector<float, StarprojUninitialised<float>> StarprojFloats;

//! For a program's main, first thing: runs the program again (the same executable and arguments) with
//! glibc.malloc.hugetlb=1 added to GLIBC_TUNABLES, so that glibc asks for transparent huge pages for its large
//! allocations (STIR's images, the set-up's arrays: each allocated apart and first touched whole, whose page faults
//! were nearly half of STIR's own set-up time on the 2-core development machine), when the kernel gives them only where
//! asked ("madvise"); glibc reads its tunables only at start. Returns, doing nothing, when GLIBC_TUNABLES names that
//! tunable already (the second run, or the caller's choice), when STARPROJ_STIR_HUGE_PAGES is 0, when the kernel gives
//! huge pages always or never, and when the program cannot be run again (it then goes on as it is).
void starproj_use_huge_pages(char** argv);

END_NAMESPACE_STIR

#endif
