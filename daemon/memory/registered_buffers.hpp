// SPDX-License-Identifier: MIT
// A client session's registered buffers (ring ABI 1.4): memory the client
// already has (a memfd, or a table file it maps) that column batches are
// verified from, without the client copying a byte into its arena.
//
// The daemon never maps a registered buffer: it keeps a descriptor of its
// own (a duplicate of the one passed) and a worker reads each chunk's columns
// with pread straight into its private staging memory (daemon/memory/staging.hpp).
// Why not a mapping: reading a hole of a sparse memfd
// through a shared mapping allocates the page in the file, charged to the
// daemon, kept after the unregister; pread of a hole copies zeros and
// allocates nothing, so a client cannot make the daemon hold memory of the
// size it registers. A registered buffer hence needs no SIGBUS guard slot:
// a file that shrinks under a batch is a short read (the buffer is lost, the
// batch ends with Status::buffer_lost, the registration is dropped), never a
// fault. A client that rewrites the bytes under a batch only changes its own
// verdicts: every verdict is that of the bytes the worker read.
//
// Reader-thread owned (the session's reader registers, unregisters and looks
// up); the counts are read by the stats thread, hence the mutex. Batches hold
// a shared_ptr to their files, so an unregister or the session's end closes a
// buffer's descriptor only once no chunk reads it any more.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "daemon/memory/submission_checks.hpp"
#include "sigverify/shm_protocol/segment_layout.hpp"

namespace sigverify::daemon {

// The descriptors all sessions together may hold for registered buffers
// (set at start-up from what RLIMIT_NOFILE leaves, daemon/serve/server.cpp;
// unbounded until then). A registration past it is refused, never an
// accept or a segment left without a descriptor.
void set_registered_descriptor_budget(std::uint64_t descriptors);
std::uint64_t registered_descriptors_held();

// One registered range [offset, offset + size) of a client's file.
class RegisteredFile {
public:
    // Takes fd (the daemon's own duplicate); the range was checked against
    // the file's size by the caller.
    RegisteredFile(int fd, std::uint64_t offset, std::uint64_t size) noexcept
        : fd_(fd), offset_(offset), size_(size) {}
    ~RegisteredFile();
    RegisteredFile(const RegisteredFile&) = delete;
    RegisteredFile& operator=(const RegisteredFile&) = delete;

    std::uint64_t size() const { return size_; }
    // Copies [at, at + length) of the range (at + length <= size()) to out.
    // False when the file no longer holds it (it shrank: a short read) or
    // cannot be read (an I/O error, or a flag the client set on the open
    // file description it shares with the daemon, e.g. O_DIRECT): the buffer
    // is lost from then on and no verdict may be made of what was read.
    bool read(std::uint64_t at, std::size_t length, std::uint8_t* out) const noexcept;
    bool lost() const { return lost_.load(std::memory_order_acquire); }

private:
    const int fd_;
    const std::uint64_t offset_;
    const std::uint64_t size_;
    mutable std::atomic<bool> lost_{false};
};

// A registered-columns job's columns: for each, the file it is read from, its
// offset in that file's registered range and the buffer's id (to drop a lost
// registration). Every range was checked against its file's size.
struct RegisteredColumnSource {
    struct Column {
        std::shared_ptr<const RegisteredFile> file;
        std::uint64_t offset = 0;
        std::uint64_t buffer_id = 0;
    };
    Column message, key, signature;

    bool active() const { return message.file != nullptr; }
    bool lost() const { return active() && (message.file->lost() || key.file->lost() || signature.file->lost()); }
    void reset() { message = key = signature = Column{}; }
};

struct RegisterOutcome {
    shm::Status status = shm::Status::ok;
    std::uint64_t id = 0;
    std::uint32_t detail = 0;  // errno of a system_error
    std::string error;         // the reason of a refusal, for the client
    bool file_system = false;  // refused for its file system (not a memfd, not local)
};

class RegisteredBuffers {
public:
    RegisteredBuffers(std::uint64_t max_bytes, unsigned max_count) : max_bytes_(max_bytes), max_count_(max_count) {}

    // Checks the descriptor (a memfd, or a regular file on a local file
    // system, open for reading: never a file whose reads may wait on another
    // process, such as FUSE's) and the range (fstat), the session's
    // limits and the daemon's descriptor budget, and keeps a duplicate of fd.
    // The caller keeps (and closes) fd.
    RegisterOutcome add(int fd, std::uint64_t offset, std::uint64_t size);
    // ok, or not_found. Batches in flight keep their file until they finish.
    shm::Status remove(std::uint64_t id);
    // The file of buffer id, or null.
    std::shared_ptr<const RegisteredFile> find(std::uint64_t id) const;
    // The columns of a checked verify_registered_columns entry: looks up its
    // buffer and checks every column inside it (check_registered_columns).
    // ok, not_found, bad_range (detail: the column) or buffer_lost (a buffer
    // found lost by an earlier batch: its registration is dropped now).
    shm::Status columns_for(shm::CheckedSubmission& c, RegisteredColumnSource& out, std::uint32_t* detail);
    // The same for a checked verify_registered_column_set entry (ABI 1.6)
    // and the set the session copied out of its arena: each column in its
    // own buffer (check_registered_column_set); the first column whose id is
    // unknown answers not_found, the first lost one buffer_lost.
    shm::Status columns_for_set(shm::CheckedSubmission& c, const shm::RegisteredColumnSet& set,
                                RegisteredColumnSource& out, std::uint32_t* detail);
    // Drops the registration of every lost buffer of src; true when there was one.
    bool drop_lost(const RegisteredColumnSource& src);
    // Drops every registration (the session ended).
    void clear();

    std::uint64_t bytes() const;
    std::size_t count() const;

private:
    const std::uint64_t max_bytes_;
    const unsigned max_count_;
    mutable std::mutex mu_;
    std::map<std::uint64_t, std::shared_ptr<const RegisteredFile>> buffers_;
    std::uint64_t bytes_ = 0;
    std::uint64_t next_id_ = 1;  // never reused within a session; 0 is never an id
};

}  // namespace sigverify::daemon
