// SPDX-License-Identifier: MIT
// libsigverify internals: registered buffers (client.hpp's RegisteredBuffer,
// Client::register_buffer, Client::verify_registered_columns; ring ABI 1.4).
//
// Registering sends a RegisterRequest with the buffer's descriptor over the
// control socket and waits for the daemon's RegisterReply, all under the
// client's mutex: while a reply is pending no other thread may look at the
// socket (alive_locked takes any readable data for a hang-up). The client
// keeps a descriptor and a read-only mapping of its own: the local fallback
// verifies from that mapping, and after a reconnect the next batch registers
// the buffer again with the new daemon (ids belong to one session).
//
// A registered batch is pipelined like the column copy API, but a piece
// reserves only its verdict bytes in the arena: the columns are named by
// offsets into the buffer and never copied (0 bytes per row); the verdicts
// are copied out to the caller (1 byte per row).
#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include "client_impl.hpp"
#include "pipeline.hpp"
#include "shm_protocol/doorbell.hpp"
#include "shm_protocol/fd_passing.hpp"

namespace sigverify {

using detail::align_up;
using detail::is_daemon_failure;
using detail::kAlign;

namespace {

// Reads up to n bytes of fd at `at` into out; fewer at the file's end (or on
// an error): the count read.
std::size_t read_at(int fd, std::uint8_t* out, std::size_t n, std::uint64_t at) {
    std::size_t done = 0;
    while (done < n) {
        const ssize_t r = ::pread(fd, out + done, n - done, static_cast<off_t>(at + done));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        done += static_cast<std::size_t>(r);
    }
    return done;
}

// True when a registered file still holds its whole registered range.
bool still_whole(const RegisteredBuffer::State& b) {
    struct stat sb;
    return fstat(b.fd, &sb) == 0 && sb.st_size >= 0 && static_cast<std::uint64_t>(sb.st_size) >= b.offset + b.size;
}

// The local fallback on rows [begin, begin + count) of a registered source,
// verified from copies read with pread, never through the client's mapping:
// a file that shrank before or during the call would fault there (SIGBUS,
// the caller's process dies) and reads short here. Rows past the file's end
// are cut: verdict 0 and the status buffer_lost, never a verdict.
BatchResult verify_registered_here(detail::LocalFallback& local, const detail::RegisteredSource& src,
                                   wire::SigEncoding enc, std::size_t begin, std::size_t count, std::uint8_t* out) {
    constexpr std::size_t kPieceRows = 4096;
    const std::size_t widths[3] = {wire::kColumnMessageWidth, wire::column_key_width(src.kind),
                                   wire::kColumnSignatureWidth};
    BatchResult total;
    try {
        std::vector<std::uint8_t> copy[3];
        for (std::size_t done = 0; done < count;) {
            const std::size_t rows = std::min(kPieceRows, count - done);
            std::size_t whole = rows;
            for (int i = 0; i < 3; ++i) {
                copy[i].resize(rows * widths[i]);
                const std::uint64_t at = src.buffer[i]->offset + src.offset[i] + (begin + done) * widths[i];
                whole = std::min(whole, read_at(src.buffer[i]->fd, copy[i].data(), copy[i].size(), at) / widths[i]);
            }
            if (whole > 0) {
                wire::ColumnSpan c;
                c.kind = src.kind;
                c.encoding = enc;
                c.count = whole;
                c.message = copy[0].data();
                c.key = copy[1].data();
                c.signature = copy[2].data();
                const BatchResult r = local.run_columns(c, wire::Mode::results, out + done);
                total.valid += r.valid;
                total.invalid += r.invalid;
                total.local_rows += r.local_rows;
                if (r.status != Status::ok) total.status = r.status;
            }
            if (whole < rows) {
                std::memset(out + done + whole, 0, count - done - whole);
                total.status = Status::buffer_lost;
                return total;
            }
            done += rows;
        }
    } catch (const std::bad_alloc&) {
        total.status = Status::system_error;
    }
    return total;
}

// Rows per registered piece: as the copy API's (the arena would hold far more
// verdicts, but larger pieces measured no faster and a cancel waits for
// whole pieces' running chunks); the daemon splits each over its workers.
constexpr std::size_t kRegisteredChunkRows = detail::kMaxChunkRows;
// Longest wait for the daemon's answer to a registration (it reads its
// control socket at once when rung, else within 20 ms).
constexpr auto kControlReplyTimeout = std::chrono::seconds(2);

void release_state(RegisteredBuffer::State* st) {
    if (st == nullptr) return;
    if (st->map != nullptr) munmap(st->map, st->map_length);
    if (st->fd >= 0) ::close(st->fd);
    delete st;
}

// Offsets [offset, offset + count * width) inside size bytes, overflow-free.
bool column_fits(std::uint64_t offset, std::uint64_t count, std::uint64_t width, std::uint64_t size) {
    if (offset > size) return false;
    return count <= (size - offset) / width;
}

// True when two of the columns lie in one buffer and share a byte (each
// already inside its buffer: no overflow; an empty column overlaps nothing).
bool columns_overlap(const detail::RegisteredSource& src, std::uint64_t count, const std::size_t (&widths)[3]) {
    for (int i = 0; i < 3; ++i)
        for (int j = i + 1; j < 3; ++j) {
            if (src.buffer[i] != src.buffer[j] || count == 0) continue;
            const std::uint64_t a = src.offset[i], a_end = a + count * widths[i];
            const std::uint64_t b = src.offset[j], b_end = b + count * widths[j];
            if (a < b_end && b < a_end) return true;
        }
    return false;
}

}  // namespace

// ---------------------------------------------------------------------------
// The control-socket exchange
// ---------------------------------------------------------------------------
Status Client::Impl::control_round_trip_locked(const void* request, std::size_t size, int pass_fd,
                                               std::uint32_t magic, shm::RegisterReply& reply) {
    const Status st = control_exchange_locked(request, size, pass_fd, magic, &reply, sizeof reply,
                                              "a buffer registration");
    reply.error[sizeof reply.error - 1] = '\0';
    return st;
}

Status Client::Impl::control_exchange_locked(const void* request, std::size_t size, int pass_fd,
                                             std::uint32_t magic, void* reply, std::size_t reply_size,
                                             const char* what) {
    if (!shm::send_packet(conn.fd, request, size, pass_fd)) {
        mark_dead_locked(std::string("cannot send to sigverifyd: ") + std::strerror(errno));
        return Status::disconnected;
    }
    shm::ring_force(conn.header->daemon_bell);  // the reader checks its socket when rung
    const auto deadline = Clock::now() + kControlReplyTimeout;
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() <= 0) {
            // A late reply would be taken for a hang-up later: give the session up.
            mark_dead_locked(std::string("sigverifyd did not answer ") + what);
            return Status::timeout;
        }
        pollfd p{conn.fd, POLLIN | POLLRDHUP, 0};
        const int r = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 20)));
        if (r < 0 && errno != EINTR) {
            mark_dead_locked(std::string("poll: ") + std::strerror(errno));
            return Status::disconnected;
        }
        if (r <= 0) {
            if (shm::word(conn.header->state).load(std::memory_order_acquire) ==
                static_cast<std::uint32_t>(shm::SegmentState::closed)) {
                mark_dead_locked("sigverifyd ended the session");
                return Status::disconnected;
            }
            continue;
        }
        if ((p.revents & POLLIN) == 0) {
            mark_dead_locked("sigverifyd went away (control socket closed)");
            return Status::disconnected;
        }
        // Larger than every reply (InfoReply is the largest), so a bigger one reads as truncated.
        alignas(8) std::uint8_t buf[2048];
        if (reply_size > sizeof buf) return Status::invalid_argument;
        const shm::ReceivedPacket got = shm::receive_packet(conn.fd, buf, sizeof buf, shm::KeepDescriptor::none);
        std::uint32_t got_magic = 0;
        if (got.bytes >= static_cast<ssize_t>(sizeof got_magic)) std::memcpy(&got_magic, buf, sizeof got_magic);
        if (got.bytes != static_cast<ssize_t>(reply_size) || got.truncated || got.fds_closed != 0 ||
            got_magic != magic) {
            mark_dead_locked(got.bytes == 0 ? "sigverifyd went away (control socket closed)"
                                            : "sigverifyd sent an unexpected control message");
            return Status::disconnected;
        }
        std::memcpy(reply, buf, reply_size);
        return Status::ok;
    }
}

Status Client::Impl::register_locked(RegisteredBuffer::State& b) {
    if (!live) return conn.header == nullptr ? Status::unreachable : Status::disconnected;
    if (conn.abi_minor < shm::kAbiMinorRegistered) {
        last_error = "sigverifyd speaks ring ABI " + std::to_string(shm::kAbiMajor) + "." +
                     std::to_string(conn.abi_minor) + "; registered buffers need " + std::to_string(shm::kAbiMajor) +
                     "." + std::to_string(shm::kAbiMinorRegistered);
        return Status::bad_entry;
    }
    shm::RegisterRequest req{};
    req.magic = shm::kRegisterMagic;
    req.offset = b.offset;
    req.size = b.size;
    shm::RegisterReply reply{};
    if (const Status st = control_round_trip_locked(&req, sizeof req, b.fd, shm::kRegisterReplyMagic, reply);
        st != Status::ok)
        return st;
    if (reply.status != static_cast<std::uint32_t>(Status::ok)) {
        last_error = std::string("sigverifyd refused the buffer: ") + reply.error;
        return reply.status < shm::kStatusCount ? static_cast<Status>(reply.status) : Status::system_error;
    }
    b.daemon_id = reply.buffer_id;
    b.serial = session_serial;
    return Status::ok;
}

void Client::Impl::unregister_locked(RegisteredBuffer::State& b) {
    if (b.daemon_id == 0 || b.serial != session_serial || !live) return;  // nothing registered in this session
    shm::UnregisterRequest req{};
    req.magic = shm::kUnregisterMagic;
    req.buffer_id = b.daemon_id;
    shm::RegisterReply reply{};
    control_round_trip_locked(&req, sizeof req, -1, shm::kUnregisterReplyMagic, reply);
    b.daemon_id = 0;
    b.serial = 0;
}

// ---------------------------------------------------------------------------
// Batches
// ---------------------------------------------------------------------------
Status Client::Impl::reserve_registered(const detail::RegisteredSource& src, std::size_t begin, std::size_t count,
                                        ColumnBatch& batch, bool wait) {
    std::unique_lock lk(mu);
    if (!live) return Status::disconnected;
    for (const RegisteredBuffer::State* b : src.buffer)
        if (b->serial != session_serial || b->daemon_id == 0) return Status::disconnected;  // another daemon's
    // The set form names its columns in the arena, after the verdicts.
    const bool set = !src.one_buffer();
    const std::uint64_t set_bytes = set ? sizeof(shm::RegisteredColumnSet) : 0;
    if (count > conn.arena_size - kAlign - set_bytes) return Status::too_large;
    std::uint32_t index = 0;
    if (const Status st = alloc_waiting_locked(lk, align_up(count) + set_bytes, wait, index); st != Status::ok)
        return st;
    Slot& s = slots[index];
    const std::uint64_t widths[3] = {wire::kColumnMessageWidth, wire::column_key_width(src.kind),
                                     wire::kColumnSignatureWidth};
    std::uint64_t at[3];
    for (int i = 0; i < 3; ++i) at[i] = src.offset[i] + std::uint64_t(begin) * widths[i];
    s.shape = set ? detail::BatchShape::registered_column_set : detail::BatchShape::registered_columns;
    s.results_offset = s.rows_offset;
    if (set) {
        s.column_set_offset = s.rows_offset + align_up(count);
        shm::RegisteredColumnSet cs{};
        cs.message = {src.buffer[0]->daemon_id, at[0]};
        cs.key = {src.buffer[1]->daemon_id, at[1]};
        cs.signature = {src.buffer[2]->daemon_id, at[2]};
        std::memcpy(conn.arena + s.column_set_offset, &cs, sizeof cs);
    } else {
        s.buffer_id = src.buffer[0]->daemon_id;
        s.message_offset = at[0];
        s.key_offset = at[1];
        s.signature_offset = at[2];
    }
    s.count = count;
    s.kind = src.kind;
    s.tail_size = 0;
    batch = ColumnBatch{};
    batch.results = conn.arena + s.results_offset;
    batch.count = count;
    batch.kind = src.kind;
    batch.slot = index;
    batch.generation = s.generation;
    return Status::ok;
}

namespace {

// Whether a registered source is a request a caller may make: known enums,
// every column inside its buffer, no two columns overlapping in one buffer
// (refused here before anything is sent; the daemon refuses those that only
// fit by overlapping with bad_range: the last line of defence).
bool registered_source_ok(const detail::RegisteredSource& src, const std::size_t (&widths)[3]) {
    const bool bad_enums =
        static_cast<std::uint8_t>(src.kind) > 1 || !wire::encoding_accepted(src.kind, src.encoding);
    if (bad_enums) return false;
    for (int i = 0; i < 3; ++i)
        if (!column_fits(src.offset[i], src.count, widths[i], src.buffer[i]->size)) return false;
    return !columns_overlap(src, src.count, widths);
}

}  // namespace

// Under the client's mutex: the session (reconnected if due), each buffer
// registered with this session (or found lost), and the chunk the arena
// takes. ok when the daemon can verify the source in place.
Status Client::Impl::prepare_registered(const detail::RegisteredSource& src, std::size_t& chunk) {
    std::unique_lock lk(mu);
    maybe_reconnect_locked(lk);
    Status registration = Status::ok;
    if (!src.one_buffer() && live && conn.abi_minor < shm::kAbiMinorRegisteredColumnSet) {
        last_error = "sigverifyd speaks ring ABI " + std::to_string(shm::kAbiMajor) + "." +
                     std::to_string(conn.abi_minor) + "; a registered buffer per column needs " +
                     std::to_string(shm::kAbiMajor) + "." + std::to_string(shm::kAbiMinorRegisteredColumnSet);
        registration = Status::bad_entry;
    }
    for (int i = 0; i < 3 && registration == Status::ok; ++i) {
        RegisteredBuffer::State& b = *src.buffer[i];
        // A file cut below its registered range is lost (the daemon
        // would refuse it as invalid_argument, which it is not).
        if (!still_whole(b)) {
            last_error = "a registered file shrank below its registered range";
            registration = Status::buffer_lost;
        } else if (b.serial != session_serial || b.daemon_id == 0) {
            registration = register_locked(b);
        }
    }
    if (live && conn.arena_size / 4 > kAlign)
        chunk = std::min<std::size_t>(chunk, static_cast<std::size_t>(conn.arena_size / 4 - kAlign));
    return registration;
}

// The local fallback over the whole source (no daemon, an old one, or one
// that refused a buffer), chunk by chunk; a chunk past a shrunk file's end
// ends it with buffer_lost.
BatchResult Client::Impl::verify_registered_locally(const detail::RegisteredSource& src, wire::SigEncoding enc,
                                                    std::uint8_t* results, const detail::CancelCheck& stop) {
    BatchResult total;
    detail::CountsOnlyScratch scratch;  // results == nullptr: the verdicts are only counted
    for (std::size_t begin = 0; begin < src.count; begin += detail::kMaxChunkRows) {
        if (stop.stop_requested()) {
            total.status = Status::cancelled;
            return total;
        }
        const std::size_t count = std::min(src.count - begin, detail::kMaxChunkRows);
        std::uint8_t* out = results != nullptr ? results + begin : scratch.get(count);
        const BatchResult r = out == nullptr ? BatchResult{Status::system_error, 0, 0, 0}
                                             : verify_registered_here(local, src, enc, begin, count, out);
        total.valid += r.valid;
        total.invalid += r.invalid;
        total.local_rows += r.local_rows;
        if (r.status != Status::ok) total.status = r.status;
        if (r.status == Status::buffer_lost) break;  // the rest is past the file's end too
    }
    return total;
}

BatchResult Client::Impl::run_registered(const detail::RegisteredSource& src, std::uint8_t* results, std::uint8_t table,
                                         const detail::CancelCheck& stop) {
    BatchResult total;
    const std::size_t n = src.count;
    const std::size_t widths[3] = {wire::kColumnMessageWidth, wire::column_key_width(src.kind),
                                   wire::kColumnSignatureWidth};
    if (!registered_source_ok(src, widths)) {
        total.status = Status::invalid_argument;
        return total;
    }
    if (n != 0 && results != nullptr) std::memset(results, 0, n);  // fail closed
    if (n == 0) return total;
    const wire::SigEncoding enc = src.kind == wire::RecordKind::schnorr ? wire::SigEncoding::opaque : src.encoding;
    std::size_t chunk = kRegisteredChunkRows;
    if (const Status registration = prepare_registered(src, chunk); registration != Status::ok) {
        if (opt.fallback == Fallback::local && !stop.stop_requested())
            return verify_registered_locally(src, enc, results, stop);
        total.status = stop.stop_requested() ? Status::cancelled : registration;
        return total;
    }
    detail::CountsOnlyScratch scratch;  // results == nullptr: the local fallback's verdicts
    total = pipeline<ColumnBatch>(
        n, chunk, wire::Mode::results, enc, table, stop,
        [&](std::size_t begin, std::size_t count, ColumnBatch& batch, bool wait) {
            return reserve_registered(src, begin, count, batch, wait);
        },
        [&](std::size_t begin, std::size_t count, const ColumnBatch& batch) {
            if (results != nullptr) std::memcpy(results + begin, batch.results, count);
        },
        [&](std::size_t begin, std::size_t count) {
            std::uint8_t* out = results != nullptr ? results + begin : scratch.get(count);
            if (out == nullptr) return BatchResult{Status::system_error, 0, 0, 0};
            return verify_registered_here(local, src, enc, begin, count, out);
        },
        [&](Status st) { return is_daemon_failure(st) || st == Status::too_large; });
    if (total.status == Status::buffer_lost || total.status == Status::not_found) {
        // The daemon dropped a registration (or another thread's batch saw it
        // lost first); the next call registers the buffers again. Those the
        // daemon still holds are unregistered first, so none is held twice.
        std::lock_guard lk(mu);
        for (int i = 0; i < 3; ++i) {
            RegisteredBuffer::State& b = *src.buffer[i];
            if (i > 0 && (&b == src.buffer[0] || (i > 1 && &b == src.buffer[1]))) continue;  // done already
            unregister_locked(b);
        }
    }
    return total;
}

// ---------------------------------------------------------------------------
// RegisteredBuffer
// ---------------------------------------------------------------------------
RegisteredBuffer::RegisteredBuffer() noexcept = default;
RegisteredBuffer::~RegisteredBuffer() { reset(); }
RegisteredBuffer::RegisteredBuffer(RegisteredBuffer&& other) noexcept : state_(other.state_) {
    other.state_ = nullptr;
}
RegisteredBuffer& RegisteredBuffer::operator=(RegisteredBuffer&& other) noexcept {
    if (this != &other) {
        reset();
        state_ = other.state_;
        other.state_ = nullptr;
    }
    return *this;
}
bool RegisteredBuffer::registered() const noexcept { return state_ != nullptr; }
const std::uint8_t* RegisteredBuffer::data() const noexcept { return state_ != nullptr ? state_->data : nullptr; }
std::uint64_t RegisteredBuffer::size() const noexcept { return state_ != nullptr ? state_->size : 0; }
std::uint64_t RegisteredBuffer::id() const noexcept {
    if (state_ == nullptr || state_->impl->pid != ::getpid()) return 0;  // a parent's registration (forked)
    std::lock_guard lk(state_->impl->mu);
    return state_->serial == state_->impl->session_serial ? state_->daemon_id : 0;
}
void RegisteredBuffer::reset() noexcept {
    if (state_ == nullptr) return;
    if (state_->impl->pid != ::getpid()) {  // forked: the parent's registration, its session not ours
        state_ = nullptr;                    // left alone (the parent unregisters it)
        return;
    }
    try {
        std::lock_guard lk(state_->impl->mu);
        state_->impl->unregister_locked(*state_);
    } catch (...) {
        // A lock that cannot be taken leaves the registration to the session's end.
    }
    release_state(state_);
    state_ = nullptr;
}

// ---------------------------------------------------------------------------
// Client
// ---------------------------------------------------------------------------
Status Client::register_buffer(int fd, std::uint64_t offset, std::uint64_t size, RegisteredBuffer& buffer) {
    buffer.reset();
    struct stat sb;
    if (fd < 0 || size == 0 || fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) return Status::invalid_argument;
    const std::uint64_t file_size = sb.st_size > 0 ? static_cast<std::uint64_t>(sb.st_size) : 0;
    if (offset > file_size || size > file_size - offset) return Status::invalid_argument;
    if (size > std::numeric_limits<std::size_t>::max() / 2) return Status::too_large;
    auto* st = new (std::nothrow) RegisteredBuffer::State;
    if (st == nullptr) return Status::system_error;
    st->impl = &session();
    st->offset = offset;
    st->size = size;
    st->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    const std::uint64_t page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
    const std::uint64_t aligned = offset / page * page;
    st->map_length = static_cast<std::size_t>(offset - aligned + size);
    void* m = st->fd >= 0 ? mmap(nullptr, st->map_length, PROT_READ, MAP_SHARED, st->fd, static_cast<off_t>(aligned))
                          : MAP_FAILED;
    if (m == MAP_FAILED) {
        const int e = errno;
        release_state(st);
        return e == EACCES ? Status::invalid_argument : Status::system_error;
    }
    st->map = m;
    st->data = static_cast<const std::uint8_t*>(m) + (offset - aligned);
    Status result;
    {
        std::unique_lock lk(session().mu);
        session().maybe_reconnect_locked(lk);
        result = session().register_locked(*st);
        // With the local fallback, a buffer no daemon can take now is verified
        // here (and registered with a daemon on a later call when one can).
        const bool refused = result == Status::invalid_argument || result == Status::too_large ||
                             result == Status::system_error;
        if (result != Status::ok && session().opt.fallback == Fallback::local && !refused) result = Status::ok;
    }
    if (result != Status::ok) {
        release_state(st);
        return result;
    }
    buffer.state_ = st;
    return Status::ok;
}

RegisteredBuffer Client::register_buffer(int fd, std::uint64_t offset, std::uint64_t size) {
    RegisteredBuffer b;
    const Status st = register_buffer(fd, offset, size, b);
    if (st != Status::ok) {
        const std::string why = session().opt.fallback == Fallback::none ? last_error() : std::string();
        // too_large names the arena in general; here it can only be a registration limit.
        const std::string what = st == Status::too_large ? std::string("over the daemon's registered-buffer limits")
                                                         : std::string(shm::to_string(st));
        throw Error(st, "register_buffer: " + what + (why.empty() ? std::string() : ": " + why));
    }
    return b;
}

namespace {

// Offsets, kind, encoding and count of either registered form (RegisteredColumns
// or RegisteredColumnBuffers: the same field names) into src.
template <class Columns>
void set_columns(const Columns& columns, detail::RegisteredSource& src) {
    src.offset[0] = columns.message_offset;
    src.offset[1] = columns.key_offset;
    src.offset[2] = columns.signature_offset;
    src.kind = columns.kind;
    src.encoding = columns.encoding;
    src.count = columns.count;
}

// The single-buffer form as a RegisteredSource; false when buffer is not one of impl's.
bool single_source(const RegisteredBuffer::State* st, const void* impl, const RegisteredColumns& columns,
                   detail::RegisteredSource& src) {
    if (st == nullptr || static_cast<const void*>(st->impl) != impl) return false;
    for (auto*& b : src.buffer) b = const_cast<RegisteredBuffer::State*>(st);
    set_columns(columns, src);
    return true;
}

BatchResult invalid_call() {
    BatchResult r;
    r.status = Status::invalid_argument;
    return r;
}

}  // namespace

BatchResult Client::verify_registered_columns(const RegisteredBuffer& buffer, const RegisteredColumns& columns,
                                              std::uint8_t* results, std::uint8_t table) {
    return verify_registered_columns(buffer, columns, results, table, std::stop_token{});
}

BatchResult Client::verify_registered_columns(const RegisteredBuffer& buffer, const RegisteredColumns& columns,
                                              std::uint8_t* results, std::uint8_t table,
                                              const std::atomic<bool>* cancel) {
    detail::RegisteredSource src;
    if (!single_source(buffer.state_, &session(), columns, src)) return invalid_call();
    return session().run_registered(src, results, table, detail::CancelCheck{{}, cancel});
}

BatchResult Client::verify_registered_columns(const RegisteredBuffer& buffer, const RegisteredColumns& columns,
                                              std::uint8_t* results, std::uint8_t table, std::stop_token stop) {
    detail::RegisteredSource src;
    if (!single_source(buffer.state_, &session(), columns, src)) return invalid_call();
    return session().run_registered(src, results, table, detail::CancelCheck{std::move(stop), nullptr});
}

namespace {

// The set form as a RegisteredSource; false when a buffer is missing or not impl's.
bool column_buffers_source(const RegisteredColumnBuffers& columns, const RegisteredBuffer::State* const (&states)[3],
                           const void* impl, detail::RegisteredSource& src) {
    for (int i = 0; i < 3; ++i) {
        if (states[i] == nullptr || static_cast<const void*>(states[i]->impl) != impl) return false;
        src.buffer[i] = const_cast<RegisteredBuffer::State*>(states[i]);
    }
    set_columns(columns, src);
    return true;
}

}  // namespace

BatchResult Client::verify_registered_columns(const RegisteredColumnBuffers& columns, std::uint8_t* results,
                                              std::uint8_t table, const std::atomic<bool>* cancel) {
    const RegisteredBuffer::State* const states[3] = {columns.message ? columns.message->state_ : nullptr,
                                                      columns.key ? columns.key->state_ : nullptr,
                                                      columns.signature ? columns.signature->state_ : nullptr};
    detail::RegisteredSource src;
    if (!column_buffers_source(columns, states, &session(), src)) return invalid_call();
    return session().run_registered(src, results, table, detail::CancelCheck{{}, cancel});
}

BatchResult Client::verify_registered_columns(const RegisteredColumnBuffers& columns, std::uint8_t* results,
                                              std::uint8_t table, std::stop_token stop) {
    const RegisteredBuffer::State* const states[3] = {columns.message ? columns.message->state_ : nullptr,
                                                      columns.key ? columns.key->state_ : nullptr,
                                                      columns.signature ? columns.signature->state_ : nullptr};
    detail::RegisteredSource src;
    if (!column_buffers_source(columns, states, &session(), src)) return invalid_call();
    return session().run_registered(src, results, table, detail::CancelCheck{std::move(stop), nullptr});
}

}  // namespace sigverify
