// SPDX-License-Identifier: Apache-2.0
/*
  The prompts of STIR's listmode data, as the listmode objective function's set-up takes them: the prompts of a time
  frame, each given a key by the caller, in the order of the file.

  Siemens' ECAT8 32-bit list (STIR's CListModeDataECAT8_32bit: the mMR file of STIR's test data, and what
  stir/bench/starproj_make_listmode writes) is read on every core: the file is read whole, and each 4-byte record is
  decoded by STIR's own record class (CListRecordECAT8_32bit: time marks, prompts, their bins), one record object per
  thread, in stretches of the file that the time marks before them put in time. Any other listmode data are read by
  STIR's reader, record after record, on one thread. Both follow the same rules, so they give the same keys in the same
  order (checked event for event by stir/tests/starproj_stir_setup_paths).
*/
#ifndef STIR_STARPROJ_STARPROJLISTMODEREADER_H
#define STIR_STARPROJ_STARPROJLISTMODEREADER_H

#include "stir/common.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

START_NAMESPACE_STIR

class Bin;
class ListModeData;
class ProjDataInfo;

//! What starproj_read_prompts reads and keeps.
struct StarprojPromptsRequest
{
  double start_time = 0; //!< prompts before this (the time of the last time mark before them) are skipped
  double end_time = 0;   //!< with do_time_frame: the reading stops at the first time mark at or after it
  bool do_time_frame = false;
  int64_t max_events = 0;     //!< > 0: stop once that many prompts are kept
  bool allow_parallel = true; //!< false: STIR's reader, record after record, whatever the format (to compare)
  //! the key of a prompt's bin (in the caller's ProjDataInfo, bin value 1, or 0 when the event has no bin there), or
  //! no_key when the prompt is outside what the caller keeps; called from several threads at once
  std::function<uint64_t(const Bin&)> key_of;
  static constexpr uint64_t no_key = ~uint64_t(0);
};

//! How the reading went: records read (up to where it stopped), prompts outside, and how it was read.
struct StarprojPromptsRead
{
  int64_t records = 0, outside = 0;
  std::string how;
};

//! The keys of the prompts kept, in the order of the file. pdi: the bins events are given (get_bin); threads: OpenMP
//! threads (0: OpenMP's default). STIR errors on a file that cannot be read.
std::vector<uint64_t> starproj_read_prompts(
    ListModeData& data, const ProjDataInfo& pdi, const StarprojPromptsRequest& request, int threads, StarprojPromptsRead& read);

//! Whether starproj_read_prompts reads data on every core (else why_not says why not): for tests and reports.
bool starproj_prompts_read_in_parallel(const ListModeData& data, std::string* why_not = nullptr);

END_NAMESPACE_STIR

#endif
