// Communicators of this process: their records in the black box, and a lock-free map from the
// ncclComm_t handle to the per-comm state the record path needs (sequence counters).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "format/bbox_layout.h"
#include "format/root_address.h"
#include "recorder/device_identity.h"
#include "recorder/in_progress.h"

namespace ncclrec::recorder {

// Job-wide communicator ids: equal on every rank of one communicator, never 0.
uint64_t commIdFromUniqueIds(const void* ids, size_t bytes);
uint64_t commIdForSplit(uint64_t parent_id, uint32_t split_index, int color);
uint64_t commIdForShrink(uint64_t parent_id, uint32_t split_index, const int* excluded, int n);
uint64_t commIdForInitAll(int pid, uint32_t call_index, int ndev);

struct CommState {
  uint32_t index = format::kNoComm;  // in the black box's comm table
  format::CommRecord* record = nullptr;
  uint64_t comm_id = 0;
  int rank = -1;
  int nranks = 0;
  int device = -1;
  // Splits and shrinks issued on this comm so far: all ranks issue them in the same order, so the
  // counter makes child ids agree across ranks.
  std::atomic<uint32_t> split_counter{0};
  // Per-peer point-to-point counters (nranks entries each).
  std::unique_ptr<std::atomic<uint64_t>[]> send_seq;
  std::unique_ptr<std::atomic<uint64_t>[]> recv_seq;
  // Ops whose call returned ncclInProgress (a nonblocking communicator), held until
  // ncclCommGetAsyncError says the communicator settled (recorder/in_progress.h); the creating
  // call of a nonblocking communicator among them.
  InProgressQueue in_progress;
  // Its record is still kCommCreating: the nonblocking creation has not settled yet.
  std::atomic<bool> creating{false};
};

struct CommInfo {
  const void* handle = nullptr;  // nullptr for a failed init: recorded, never found by find()
  uint64_t comm_id = 0;
  uint64_t parent_id = 0;
  int rank = -1;
  int nranks = 0;
  DeviceIdentity device;
  int global_rank = -1;
  int color = -1;
  int key = -1;
  uint16_t created_by = 0;  // format::OpType
  int init_result = 0;
  // kCommInitialized, kCommInitFailed for a failed init, 0 for a nonblocking creation that has
  // not settled (its record stays kCommCreating until settleCreation()).
  uint32_t state = format::kCommInitialized;
  int64_t created_ns = 0;
  uint64_t event_index = 0;
  const char* name = nullptr;
  format::RootAddress root;  // the unique id's bootstrap root, family 0 when unknown
  int blocking = -1;         // ncclConfig_t::blocking, -1 without a config
  // The record beginCreation() claimed for this communicator; kNoComm: add() claims one.
  uint32_t record = format::kNoComm;
};

class CommTable {
 public:
  CommTable(format::BboxHeader* header, uint32_t capacity);
  ~CommTable();
  CommTable(const CommTable&) = delete;
  CommTable& operator=(const CommTable&) = delete;

  // When a creating call begins (not the record path: takes a mutex): claims and publishes the
  // communicator's record with what the call's arguments say, state kCommCreating, so that a
  // creation that never returns is on record. The record's index, kNoComm when the table is full.
  uint32_t beginCreation(const CommInfo& info);

  // When the creating call returned (not the record path: allocates, takes a mutex): fills the
  // record info.record names with the call's outcome and or-stores info.state into it (a record
  // of its own when info.record is kNoComm). A handle seen before (an address reused after
  // destroy) now maps to the new state. A null handle (a failed init) gets no per-peer counters
  // and is not findable. nullptr when the table is full (the caller warns once).
  CommState* add(const CommInfo& info);

  // A nonblocking creation settled (ncclCommGetAsyncError): or-stores kCommInitialized or
  // kCommInitFailed into its record, once.
  void settleCreation(CommState* comm, bool ok);

  // Record path: lock-free, no allocation. nullptr for handles never added.
  CommState* find(const void* handle) const;

  // Sets state bits on the comm's record and its end time (finalize, destroy, abort, revoke).
  void markEnded(CommState* comm, uint32_t state_bits, int64_t now_ns);

 private:
  struct Slot {
    std::atomic<uintptr_t> key{0};
    std::atomic<CommState*> value{nullptr};
  };
  format::BboxHeader* header_;
  uint32_t capacity_;
  uint32_t mask_;
  std::unique_ptr<Slot[]> slots_;
  std::unique_ptr<std::unique_ptr<CommState>[]> states_;  // owned; never freed before exit
  std::mutex add_mutex_;
};

}  // namespace ncclrec::recorder
