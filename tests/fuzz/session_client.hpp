// SPDX-License-Identifier: MIT
// The client side of one fuzzed session (fuzz_session.cpp): what it expects of
// each answer, the buffers it registered, and the operations the input picks.
// Its member functions live by concern: the handshake and the run of
// operations in fuzz_session.cpp, submissions, arena writes and reaping in
// session_client_ring.cpp, registered buffers in session_client_registered.cpp.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include "daemon/backends/backend.hpp"
#include "daemon/memory/mapping_guard.hpp"
#include "daemon/schedule/scheduler.hpp"
#include "daemon/serve/session.hpp"
#include "reference/reference_verifier.hpp"
#include "reference/row_generator.hpp"
#include "shm_protocol/doorbell.hpp"
#include "shm_protocol/fd_passing.hpp"
#include "sigverify/shm_protocol/segment_access.hpp"
#include "daemon/memory/submission_checks.hpp"
#include "tests/fuzz/session_driver.hpp"
#include "tests/fuzz/session_world.hpp"
#include "sigverify/shm_protocol/segment_layout.hpp"
#include "shm_protocol/ring_steps.hpp"
#include "shm_protocol/segment_view.hpp"
#include <fuzzer/FuzzedDataProvider.h>

namespace sigverify::fuzz {

using Clock = std::chrono::steady_clock;

struct Expect {
    shm::Status status;
    std::uint64_t rows;
    bool verify;
    bool cancel = false;        // a cancel entry (ABI 1.3): answered ok or not_found
    bool may_cancel = false;    // a verify that a later cancel entry named: may end cancelled, rows cut short
    bool entry_ok = false;      // passes check_submission (after the daemon began to shut down: shutting_down)
    std::uint64_t buffer_id = 0;        // verify_registered_columns: the buffer named (0: another opcode)
    std::optional<std::uint64_t> valid = std::nullopt;  // the valid count the reference verifier gives (pool rows)
    // verify_registered_column_set (ABI 1.6): the daemon reads the set from
    // the arena when it takes the entry. `status` is exact only if the set's
    // bytes were what the client last wrote (no write over them since the
    // push, none of them the daemon's to write) and none of its buffers shrank.
    bool column_set = false;
    bool set_exact = false;
    std::uint64_t set_offset = 0;
    std::uint64_t set_ids[3] = {0, 0, 0};  // the buffers the set the client wrote names
};

// A buffer the daemon registered for this client (ABI 1.4), as the client
// knows it.
struct Buffer {
    int file = -1;              // the client's read-write descriptor of the file (shrinks, rewrites)
    bool sealed = false;        // a sealed memfd: cannot shrink
    std::uint64_t file_size = 0;
    std::uint64_t offset = 0, size = 0;  // the registered range of the file
    bool live = true;           // not unregistered, not known to be dropped by the daemon
    bool shrunk = false;        // the file was cut into the range: the daemon may drop it (buffer_lost)
    bool rewritten = false;     // the client wrote over the range: verdicts no longer the pool's
    // Real pool rows laid out as columns (rows == 0: fuzz bytes), offsets
    // relative to the registered range.
    int table = 0;
    std::uint64_t first = 0, rows = 0;
    std::uint64_t message = 0, key = 0, signature = 0;
};

// The client side of one session, driven by the input.
class Client {
public:
    Client(FuzzedDataProvider& in, int sock, daemon::SessionDriver& daemon) : in_(in), sock_(sock), daemon_(daemon) {}
    ~Client();

    // Returns true when a session was established.
    bool handshake();

    void operations();

    // Bytes of the arena the daemon wrote outside what it was allowed to.
    void check_arena() const;

private:
    std::uint32_t outstanding() const { return sq_.tail() - cq_.head(); }

    void push(const shm::SubmissionEntry& e, std::optional<std::uint64_t> valid = std::nullopt,
              const std::uint64_t* set_ids = nullptr);

    // Rings the daemon's doorbell: the reader wakes and takes what it can.
    void bell();

    // A packet on the control socket after the handshake (issue 17: one over
    // 512 bytes, or carrying a descriptor, used to end the session silently):
    // drained, counted as a protocol error, its descriptor closed (the fd
    // count after the input checks that), and the session goes on.
    void stray_packet();

    // The client shrinks its segment through its descriptor: the daemon's next
    // access to a lost page (reader, worker, or this harness, which shares the
    // daemon's mapping) takes SIGBUS, its guard (daemon/memory/mapping_guard.hpp)
    // replaces the mapping and the session ends. Hostile from here on; the
    // arena can no longer be read back.
    void truncate_segment();

    // The daemon begins to shut down: every entry it takes from now on that
    // passes check_submission is answered shutting_down (the client then
    // reconnects to the next daemon); entries already taken finish.
    void begin_shutdown();

    // A cancel entry (ABI 1.3) naming a tag submitted earlier (answered or
    // not), one never submitted, or with stray fields (bad_entry).
    void submit_cancel();

    void submit_plausible();

    // ---- registered buffers (ABI 1.4) ----------------------------------

    // The daemon's answer to a (un)registration: one RegisterReply, never a
    // descriptor with it. False when none came (the socket's 3 s timeout).
    bool recv_register_reply(shm::RegisterReply& reply);

    // Sends one control message (the reader first takes what the ring
    // holds, so entries already written meet the buffers as they were) and
    // reads the reply. False when the session ended.
    bool control(const void* msg, std::size_t n, int pass, shm::RegisterReply& reply);

    // Registers a file: a memfd holding real pool rows as columns or fuzz
    // bytes, or a descriptor the daemon must refuse (none, the socket, a
    // pipe, a directory, a write-only file) or accept (a read-only file, a
    // sealed memfd), with a plausible, inside, past-the-end, wrapping or raw
    // range. The reply must be the one this client's own reading of the
    // protocol gives (docs/protocol.md, segment_layout.hpp).
    void register_buffer();

    // A buffer id the client knows (handed out, live or not), or 0.
    std::uint64_t known_id(std::uint8_t pick, bool live_only) const;

    // Unregisters a live buffer, one already gone, one never handed out, or
    // with reserved flags: ok exactly for a live one (or not_found for one the
    // daemon may have dropped after a shrink).
    void unregister_buffer();

    // A verify_registered_columns entry: the columns of a buffer of pool rows
    // as an honest client writes them (a sub-range of its rows; the valid
    // count is known), or fuzzed offsets, counts and fields, naming a live,
    // dead or random buffer id.
    void submit_registered();

    // A verify_registered_column_set entry (ABI 1.6) and its set, written
    // into the arena: pool rows with each column in a buffer of its own
    // where one holds them (the valid count is known), or fuzzed ids,
    // offsets, counts, reserved words and an unaligned set.
    void submit_registered_set();

    // The client cuts one of its registered files (between batches, or under
    // one it wrote without ringing): a batch reading a lost page answers
    // buffer_lost, later ones not_found; never a crash of the daemon.
    void shrink_buffer();

    // The client rewrites bytes of a registered file: only its own verdicts
    // change (the daemon stages each row before verifying it).
    void rewrite_buffer();

    void submit_raw();

    void write_arena(std::uint64_t off, const std::uint8_t* p, std::size_t n);

    // What the daemon answers a verify_registered_column_set entry whose set
    // is at c.column_set_offset, if it reads the bytes the client wrote there
    // (RegisteredBuffers::columns_for_set's order: each column's buffer, then
    // the ranges). Sets `exact` false where the daemon may answer otherwise.
    shm::Status column_set_answer(shm::CheckedSubmission& c, bool& exact) const;

    // One of the buffers a set names was cut (now, perhaps after the push).
    bool set_buffer_shrunk(const Expect& e) const;

    void write_rows();

    void write_bytes();

    void scribble_header();

    // Reaps completions until every outstanding entry is answered (honest
    // client: must happen within the bound) or the session closed.
    void reap(bool all);

    void check_completion(const shm::CompletionEntry& c);

    FuzzedDataProvider& in_;
    int sock_;
    daemon::SessionDriver& daemon_;
    int seg_fd_ = -1;
    shm::SegmentView seg_;  // base, size and header once mapped; rings and arena once established
    // The honest client's ends of the rings (shm_protocol/ring_steps.hpp), once established.
    shm::RingProducer<shm::SubmissionEntry> sq_;
    shm::RingConsumer<shm::CompletionEntry> cq_;
    std::uint64_t next_tag_ = 1;
    std::uint64_t closing_tag_ = 0;  // the first tag the daemon takes after it began to shut down (0: not yet)
    bool hostile_ = false, closed_ = false, truncated_ = false;
    std::map<std::uint64_t, Expect> expect_;
    std::map<std::uint64_t, Buffer> buffers_;  // every buffer id the daemon handed out, by id
    // Kept across inputs (ASan hands out fresh pages for every new 64 KiB
    // buffer: page faults were a fifth of the time per input).
    static inline std::vector<std::uint8_t> shadow_, writable_;
};

}  // namespace sigverify::fuzz
