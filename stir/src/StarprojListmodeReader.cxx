// SPDX-License-Identifier: Apache-2.0
// The prompts of STIR's listmode data for the listmode objective function's set-up: Siemens' ECAT8 32-bit list on
// every core, any other by STIR's reader on one (StarprojListmodeReader.h).

#include "stir_starproj/StarprojListmodeReader.h"
#include "stir_starproj/StarprojRuntime.h"

#include "stir/Bin.h"
#include "stir/ByteOrder.h"
#include "stir/IO/InterfileHeaderSiemens.h"
#include "stir/ProjDataInfo.h"
#include "stir/error.h"
#include "stir/listmode/CListModeDataECAT8_32bit.h"
#include "stir/listmode/CListRecordECAT8_32bit.h"
#include "stir/listmode/ListModeData.h"
#include "stir/listmode/ListRecord.h"
#include "stir/utilities.h"

#ifdef _OPENMP
#  include <omp.h>
#endif

#include <algorithm>
#include <fstream>
#include <memory>
#include <typeinfo>

START_NAMESPACE_STIR

namespace
{
const std::size_t record_bytes = 4; // ECAT8 32-bit: every record is one little-endian 32-bit word

//! STIR's loop over the records, one after the other (any listmode data)
std::vector<uint64_t>
read_by_stir(ListModeData& data, const ProjDataInfo& pdi, const StarprojPromptsRequest& request, StarprojPromptsRead& read)
{
  std::vector<uint64_t> keys;
  if (data.reset() != Succeeded::yes)
    error("Starproj: could not rewind the listmode data");
  shared_ptr<ListRecord> record_sptr = data.get_empty_record_sptr();
  ListRecord& record = *record_sptr;
  double current_time = 0;
  while (data.get_next_record(record) == Succeeded::yes)
    {
      ++read.records;
      if (record.is_time())
        {
          current_time = record.time().get_time_in_secs();
          if (request.do_time_frame && current_time >= request.end_time)
            break;
        }
      if (current_time < request.start_time || !record.is_event() || !record.event().is_prompt())
        continue;
      Bin bin;
      bin.set_bin_value(1.F);
      record.event().get_bin(bin, pdi);
      const uint64_t key = request.key_of(bin);
      if (key == StarprojPromptsRequest::no_key)
        {
          ++read.outside;
          continue;
        }
      keys.push_back(key);
      if (request.max_events > 0 && int64_t(keys.size()) >= request.max_events)
        break;
    }
  read.how = "STIR's reader, one record after the other";
  return keys;
}

//! the file of an ECAT8 32-bit list, as CListModeDataECAT8_32bit opens it (its header's data file, beside the header)
std::string
ecat8_data_file(const ListModeData& data)
{
  InterfileListmodeHeaderSiemens header;
  if (!header.parse(data.get_name().c_str(), false))
    error("Starproj: could not parse the listmode header " + data.get_name());
  char full[max_filename_length], directory[max_filename_length];
  if (header.data_file_name.size() + 1 > sizeof full)
    error("Starproj: the listmode data file name in " + data.get_name() + " is too long");
  get_directory_name(directory, data.get_name().c_str());
  std::copy(header.data_file_name.c_str(), header.data_file_name.c_str() + header.data_file_name.size() + 1, full);
  prepend_directory_name(full, directory);
  return full;
}
} // namespace

bool
starproj_prompts_read_in_parallel(const ListModeData& data, std::string* why_not)
{
  // exactly this class: its records are 4-byte words from the start of its file (STIR's InputStreamWithRecords)
  if (typeid(data) == typeid(ecat::CListModeDataECAT8_32bit))
    return true;
  if (why_not)
    *why_not = std::string("STIR's ") + typeid(data).name() + " is not Siemens' ECAT8 32-bit list";
  return false;
}

std::vector<uint64_t>
starproj_read_prompts(
    ListModeData& data, const ProjDataInfo& pdi, const StarprojPromptsRequest& request, int threads, StarprojPromptsRead& read)
{
  read = StarprojPromptsRead();
  if (!request.allow_parallel || !starproj_prompts_read_in_parallel(data))
    return read_by_stir(data, pdi, request, read);

  // the whole file, as STIR reads it: whole records from its start (a partial last one is not a record)
  const std::string filename = ecat8_data_file(data);
  std::ifstream file(filename, std::ios::binary | std::ios::ate);
  if (!file)
    error("Starproj: could not open the listmode data file " + filename);
  const std::streamoff size = file.tellg();
  const int64_t num_records = int64_t(size) / int64_t(record_bytes);
  std::vector<char> bytes(std::size_t(num_records) * record_bytes);
  file.seekg(0);
  if (num_records > 0 && !file.read(bytes.data(), std::streamsize(bytes.size())))
    error("Starproj: reading the listmode data file " + filename + " failed");
  const bool swap = ByteOrder::little_endian != ByteOrder::get_native_order();

  // stretches of records, each decoded by its own thread's record object (STIR's class, its tables its own)
  const int num_threads = starproj_threads_or_default(threads);
  const int64_t stretch = std::max<int64_t>(int64_t(1) << 16, (num_records + 4 * num_threads - 1) / (4 * num_threads));
  const int num_stretches = int(std::max<int64_t>(1, (num_records + stretch - 1) / stretch));
  std::vector<shared_ptr<ListRecord>> records(num_threads);
  for (auto& r : records)
    r = data.get_empty_record_sptr();
  auto decoder = [&](int thread) -> ecat::CListRecordECAT8_32bit& {
    return dynamic_cast<ecat::CListRecordECAT8_32bit&>(*records[thread]);
  };
  auto thread_num = []() {
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
  };

  // record i decoded by a thread's record object, current_time following the time marks: false when it is no prompt
  // to keep (not a prompt, or before the start time), else true with its key (no_key: outside the request)
  auto prompt_key = [&](ecat::CListRecordECAT8_32bit& decoding, int64_t i, double& current_time, uint64_t& key) {
    ListRecord& record = decoding; // STIR's queries are public in the base class
    decoding.init_from_data_ptr(&bytes[std::size_t(i) * record_bytes], record_bytes, swap);
    if (record.is_time())
      current_time = record.time().get_time_in_secs();
    if (current_time < request.start_time || !record.is_event() || !record.event().is_prompt())
      return false;
    Bin bin;
    bin.set_bin_value(1.F);
    record.event().get_bin(bin, pdi);
    key = request.key_of(bin);
    return true;
  };

  // first pass: the last time mark of each stretch, and the first one that ends the frame
  std::vector<double> last_time(num_stretches, -1);
  std::vector<int64_t> first_end(num_stretches, num_records);
#ifdef _OPENMP
#  pragma omp parallel for schedule(dynamic) num_threads(num_threads)
#endif
  for (int s = 0; s < num_stretches; ++s)
    {
      ecat::CListRecordECAT8_32bit& decoding = decoder(thread_num());
      ListRecord& record = decoding; // STIR's queries are public in the base class
      const int64_t end = std::min(num_records, (s + 1) * stretch);
      for (int64_t i = s * stretch; i < end; ++i)
        {
          decoding.init_from_data_ptr(&bytes[std::size_t(i) * record_bytes], record_bytes, swap);
          if (!record.is_time())
            continue;
          const double t = record.time().get_time_in_secs();
          last_time[s] = t;
          if (request.do_time_frame && t >= request.end_time && first_end[s] == num_records)
            first_end[s] = i;
        }
    }
  // the frame ends at its first time mark at or after its end (the reading stops there, as STIR's loop does); each
  // stretch starts at the time of the last mark before it (0 before the first)
  int64_t stop = num_records;
  for (int s = 0; s < num_stretches && stop == num_records; ++s)
    stop = first_end[s];
  std::vector<double> start_time(num_stretches, 0);
  for (int s = 1; s < num_stretches; ++s)
    start_time[s] = last_time[s - 1] >= 0 ? last_time[s - 1] : start_time[s - 1];

  // second pass: the prompts of each stretch, in order, up to where the reading stops; with max_events, a few
  // stretches at a time until they hold enough
  std::vector<std::vector<uint64_t>> kept(num_stretches);
  std::vector<int64_t> outside(num_stretches, 0);
  const int batch = request.max_events > 0 ? num_threads : num_stretches;
  std::size_t kept_so_far = 0;
  for (int first = 0; first < num_stretches; first += batch)
    {
      if (request.max_events > 0 && int64_t(kept_so_far) >= request.max_events)
        break;
      const int last = std::min(num_stretches, first + batch);
#ifdef _OPENMP
#  pragma omp parallel for schedule(dynamic) num_threads(num_threads)
#endif
      for (int s = first; s < last; ++s)
        {
          ecat::CListRecordECAT8_32bit& decoding = decoder(thread_num());
          double current_time = start_time[s];
          const int64_t end = std::min(stop, (s + 1) * stretch);
          for (int64_t i = s * stretch; i < end; ++i)
            {
              uint64_t key;
              if (!prompt_key(decoding, i, current_time, key))
                continue;
              if (key == StarprojPromptsRequest::no_key)
                ++outside[s];
              else
                kept[s].push_back(key);
            }
        }
      for (int s = first; s < last; ++s)
        kept_so_far += kept[s].size();
    }

  // in the order of the file, up to the prompt that fills max_events
  std::vector<uint64_t> keys;
  read.records = stop < num_records ? stop + 1 : num_records;
  std::size_t total = 0;
  for (int s = 0; s < num_stretches; ++s)
    total += kept[s].size();
  keys.reserve(request.max_events > 0 ? std::min<std::size_t>(total, std::size_t(request.max_events)) : total);
  for (int s = 0; s < num_stretches; ++s)
    {
      const bool last = request.max_events > 0 && int64_t(keys.size() + kept[s].size()) >= request.max_events;
      if (!last)
        {
          keys.insert(keys.end(), kept[s].begin(), kept[s].end());
          read.outside += outside[s];
          std::vector<uint64_t>().swap(kept[s]);
          continue;
        }
      // the stretch where max_events is reached: again, record by record, to find where STIR's loop would stop
      ecat::CListRecordECAT8_32bit& decoding = decoder(0);
      double current_time = start_time[s];
      const int64_t end = std::min(stop, (s + 1) * stretch);
      for (int64_t i = s * stretch; i < end; ++i)
        {
          uint64_t key;
          if (!prompt_key(decoding, i, current_time, key))
            continue;
          if (key == StarprojPromptsRequest::no_key)
            {
              ++read.outside;
              continue;
            }
          keys.push_back(key);
          if (int64_t(keys.size()) >= request.max_events)
            {
              read.records = i + 1;
              break;
            }
        }
      break;
    }
  read.how = "the file read whole, its records decoded by STIR's ECAT8 32-bit record class on " + std::to_string(num_threads)
             + " threads";
  return keys;
}

END_NAMESPACE_STIR
