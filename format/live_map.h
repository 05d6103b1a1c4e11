#pragma once
// A black box mapped read-only while its process may still write it: what live/bbox_watch.cc
// (ncclrec-top, cxxrun, ncclrec-watch) and metrics/op_counter.cc read through readEvent. One way
// to open one, with one set of checks and messages (the offline reader, bbox_reader.cc, copies the
// file's content out instead and keeps no mapping).

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"
#include "format/bbox_layout.h"

namespace ncclrec::format {

class LiveMap {
 public:
  // Maps `path`. Fails with "PATH: why" when it cannot be opened or mapped or is not a black box
  // of this version; *starting (when given) is set when it is one still being created — sized but
  // its header not yet written — so that the caller looks again when it changes.
  static base::StatusOr<std::unique_ptr<LiveMap>> open(const std::string& path,
                                                       bool* starting = nullptr);
  ~LiveMap();
  LiveMap(const LiveMap&) = delete;
  LiveMap& operator=(const LiveMap&) = delete;

  const BboxHeader* header() const { return reinterpret_cast<const BboxHeader*>(data_); }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  // The file's identity when mapped: a file made again under the same name is another one.
  dev_t device() const { return dev_; }
  ino_t inode() const { return ino_; }

 private:
  LiveMap(const uint8_t* data, size_t size, dev_t dev, ino_t ino)
      : data_(data), size_(size), dev_(dev), ino_(ino) {}
  const uint8_t* data_;
  size_t size_;
  dev_t dev_;
  ino_t ino_;
};

}  // namespace ncclrec::format
