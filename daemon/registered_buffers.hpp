// SPDX-License-Identifier: MIT
// A client session's registered buffers (ring ABI 1.4): memory the client
// already has (a memfd, or a table file it maps) that the daemon maps
// read-only so that column batches are verified straight from it, without
// the client copying a byte into its arena.
//
// Every mapping is registered with the SIGBUS guard (daemon/mapping_guard.hpp)
// as the segment is: a client that truncates the file under a batch makes the
// guard replace the mapping with zeroed memory, so the daemon reads zeros
// instead of crashing; the batch then completes with Status::buffer_lost and
// the registration is dropped. A client that rewrites the bytes under a batch
// only changes its own verdicts: the scheduler stages column batches (copies
// each row before verifying it), so every verdict is that of the bytes read.
//
// Reader-thread owned (the session's reader registers, unregisters and looks
// up); the counts are read by the stats thread, hence the mutex. Batches hold
// a shared_ptr to their mapping, so an unregister or the session's end unmaps
// a buffer only once no chunk reads it any more.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "shm_protocol/segment_layout.hpp"

namespace sigverify::daemon {

// One read-only mapping of [offset, offset + size) of a client's file.
class RegisteredMapping {
public:
    // Maps the range; on failure data() is null and error()/error_number() say why.
    RegisteredMapping(int fd, std::uint64_t offset, std::uint64_t size);
    ~RegisteredMapping();
    RegisteredMapping(const RegisteredMapping&) = delete;
    RegisteredMapping& operator=(const RegisteredMapping&) = delete;

    const std::uint8_t* data() const { return data_; }
    std::uint64_t size() const { return size_; }
    int error_number() const { return errno_; }
    // Mapped but refused: the SIGBUS guard had no free slot (data() is null).
    bool guard_full() const { return guard_full_; }
    // The file shrank under the daemon: the guard replaced the mapping with zeros.
    bool lost() const;

private:
    void* map_base_ = nullptr;   // page-aligned start of the mapping
    std::size_t map_length_ = 0;
    const std::uint8_t* data_ = nullptr;
    std::uint64_t size_ = 0;
    int guard_slot_ = -1;
    int errno_ = 0;
    bool guard_full_ = false;
};

struct RegisterOutcome {
    shm::Status status = shm::Status::ok;
    std::uint64_t id = 0;
    std::uint32_t detail = 0;  // errno of a system_error
    std::string error;         // the reason of a refusal, for the client
};

class RegisteredBuffers {
public:
    RegisteredBuffers(std::uint64_t max_bytes, unsigned max_count) : max_bytes_(max_bytes), max_count_(max_count) {}

    // Checks the descriptor and the range (fstat), the session's limits, and
    // maps it. The caller keeps (and closes) fd.
    RegisterOutcome add(int fd, std::uint64_t offset, std::uint64_t size);
    // ok, or not_found. Batches in flight keep their mapping until they finish.
    shm::Status remove(std::uint64_t id);
    // The mapping of buffer id, or null.
    std::shared_ptr<const RegisteredMapping> find(std::uint64_t id) const;
    // Drops every registration (the session ended).
    void clear();

    std::uint64_t bytes() const;
    std::size_t count() const;

private:
    const std::uint64_t max_bytes_;
    const unsigned max_count_;
    mutable std::mutex mu_;
    std::map<std::uint64_t, std::shared_ptr<const RegisteredMapping>> buffers_;
    std::uint64_t bytes_ = 0;
    std::uint64_t next_id_ = 1;  // never reused within a session; 0 is never an id
};

}  // namespace sigverify::daemon
