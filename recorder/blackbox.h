// The black-box file of this process: created at the first NCCL call, mapped MAP_SHARED so that
// its content survives SIGKILL and can be read live by other processes (layout in
// format/bbox_layout.h).
#pragma once

#include <memory>
#include <string>

#include "format/bbox_layout.h"
#include "format/recording_files.h"
#include "recorder/params.h"

namespace ncclrec::recorder {

inline constexpr uint32_t kModuleCapacity = 1024;

// What a Python process adds to its black box (all zero otherwise).
struct PythonRegions {
  uint32_t depth = 0;  // Python frames per stack, on top of the native ones
  uint32_t code_capacity = 0;
  uint64_t blob_bytes = 0;
};

class BlackBox {
 public:
  // Creates the dump directory (0700) when missing and a new file "<host>.<pid>.bbox" (0600) in
  // it, with its space reserved up front (a full disk fails here, not later with SIGBUS), and
  // fills the header's identity. nullptr with `error` set on failure. A Python process
  // (python_frames.h) asks for `python.depth` frames more per stack and the Python regions.
  static std::unique_ptr<BlackBox> create(const Params& params, std::string* error,
                                          const PythonRegions& python = PythonRegions());
  ~BlackBox();
  BlackBox(const BlackBox&) = delete;
  BlackBox& operator=(const BlackBox&) = delete;

  format::BboxHeader* header() const { return header_; }
  const std::string& path() const { return path_; }
  // Its file name in NCCLREC_DIR, parsed (recording_files.h): dumps are named after it.
  const format::RecordingName& name() const { return name_; }
  size_t bytes() const { return bytes_; }

  // After fork, in the child: forget the parent's mapping without writing to it.
  void abandon();

 private:
  BlackBox(format::BboxHeader* header, size_t bytes, std::string path, format::RecordingName name)
      : header_(header), bytes_(bytes), path_(std::move(path)), name_(std::move(name)) {}
  format::BboxHeader* header_;
  size_t bytes_;
  std::string path_;
  format::RecordingName name_;
};

// mkdir -p with mode 0700 for the directories it creates. False with `error` on failure.
bool makeDirectories(const std::string& dir, std::string* error);

}  // namespace ncclrec::recorder
