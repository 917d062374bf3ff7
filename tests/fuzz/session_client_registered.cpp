// SPDX-License-Identifier: MIT
// The fuzzed client's registered buffers (ring ABI 1.4, session_client.hpp):
// registering files the daemon must accept or refuse, unregistering,
// verify_registered_columns entries, and cutting or rewriting a registered
// file under or between batches.
#include "tests/fuzz/session_client.hpp"

namespace sigverify::fuzz {

bool Client::recv_register_reply(shm::RegisterReply& reply) {
    alignas(8) std::uint8_t buf[512];
    const shm::ReceivedPacket r = shm::receive_packet(sock_, buf, sizeof buf, shm::KeepDescriptor::first);
    if (r.fd >= 0) close(r.fd);
    FUZZ_CHECK(r.fd < 0 && r.fds_closed == 0);  // a reply never passes a descriptor back
    if (r.bytes != static_cast<ssize_t>(sizeof reply)) {
        std::fprintf(stderr, "control reply of %zd bytes (errno %d)\n", r.bytes, r.error);
        return false;
    }
    std::memcpy(&reply, buf, sizeof reply);
    FUZZ_CHECK(shm::read_text(reply.error).size() < sizeof reply.error);
    FUZZ_CHECK(reply.reserved == 0);
    return true;
}

bool Client::control(const void* msg, std::size_t n, int pass, shm::RegisterReply& reply) {
    if (!daemon_.wake()) {
        closed_ = true;
        return false;
    }
    FUZZ_CHECK(shm::send_packet(sock_, msg, n, pass));
    if (!daemon_.wake()) {
        FUZZ_CHECK(hostile_);
        closed_ = true;
        return false;
    }
    FUZZ_CHECK(recv_register_reply(reply));
    return true;
}

void Client::register_buffer() {
    const std::uint8_t how = in_.ConsumeIntegral<std::uint8_t>();
    const std::uint8_t shape = in_.ConsumeIntegral<std::uint8_t>();
    enum class Desc { memfd, none, socket, pipe, directory, read_only, write_only, sealed };
    static constexpr Desc kinds[16] = {Desc::memfd,  Desc::memfd,  Desc::memfd,     Desc::memfd,
                                       Desc::memfd,  Desc::memfd,  Desc::memfd,     Desc::memfd,
                                       Desc::memfd,  Desc::none,   Desc::socket,    Desc::pipe,
                                       Desc::directory, Desc::read_only, Desc::write_only, Desc::sealed};
    Desc desc = kinds[how % 16];
    // The file's contents: real rows as columns, at a fuzzed place.
    Buffer b;
    std::vector<std::uint8_t> content;
    std::uint64_t pad = in_.ConsumeIntegralInRange<std::uint64_t>(0, 8192);
    if ((how & 0x10) == 0) {
        b.table = in_.ConsumeIntegralInRange<int>(0, 3);
        b.first = in_.ConsumeIntegralInRange<std::uint64_t>(0, 31);
        b.rows = in_.ConsumeIntegralInRange<std::uint64_t>(1, 32 - b.first);
        const auto t = static_cast<wire::Table>(b.table);
        const wire::RecordKind kind = wire::record_kind(t);
        const std::size_t kw = wire::column_key_width(kind);
        const std::size_t stride = wire::stride(kind, wire::canonical_tail_size(t));
        content.resize(b.rows * (wire::kColumnMessageWidth + kw + wire::kColumnSignatureWidth));
        std::uint8_t* msg = content.data();
        std::uint8_t* key = msg + b.rows * wire::kColumnMessageWidth;
        std::uint8_t* sig = key + b.rows * kw;
        for (std::uint64_t i = 0; i < b.rows; ++i) {
            const std::uint8_t* row = world->pool[b.table].data() + (b.first + i) * stride;
            std::memcpy(msg + i * 32, row, 32);
            std::memcpy(key + i * kw, row + 32, kw);
            std::memcpy(sig + i * 64, row + 32 + kw, 64);
        }
        b.message = pad;
        b.key = pad + (key - msg);
        b.signature = pad + (sig - msg);
    } else {
        content = in_.ConsumeBytes<std::uint8_t>(in_.ConsumeIntegralInRange<std::size_t>(0, 512));
    }
    const std::uint64_t end = pad + content.size();
    b.file_size = (how & 0x20) ? in_.ConsumeIntegralInRange<std::uint64_t>(0, kMaxFileSize)
                               : end + in_.ConsumeIntegralInRange<std::uint64_t>(0, 8192);
    // The range.
    std::uint32_t flags = 0;
    std::uint64_t offset = 0, size = 0;
    const std::uint64_t fs = b.file_size;
    switch ((shape >> 5) & 7) {
    case 0:
    case 1:
    case 2:  // what an honest client sends: the columns, from a page boundary or from them
        offset = (shape & 1) ? std::min(pad, fs) : std::min(pad / 4096 * 4096, fs);
        size = (shape & 2) ? fs - offset : std::min(end, fs) - offset;
        break;
    case 3:  // any range inside (size 0 included)
        offset = in_.ConsumeIntegralInRange<std::uint64_t>(0, fs);
        size = in_.ConsumeIntegralInRange<std::uint64_t>(0, fs - offset);
        break;
    case 4:  // past the end
        offset = in_.ConsumeIntegralInRange<std::uint64_t>(0, fs + 1);
        size = fs - std::min(offset, fs) + in_.ConsumeIntegralInRange<std::uint64_t>(1, 4096);
        break;
    case 5:  // offset + size wraps
        offset = UINT64_MAX - in_.ConsumeIntegralInRange<std::uint64_t>(0, 4096);
        size = in_.ConsumeIntegralInRange<std::uint64_t>(1, fs + 1) + (UINT64_MAX - offset);
        if (shape & 1) std::swap(offset, size);
        break;
    case 6:  // raw
        offset = in_.ConsumeIntegral<std::uint64_t>();
        size = in_.ConsumeIntegral<std::uint64_t>();
        break;
    default:  // an honest range with reserved flags set
        size = fs;
        flags = in_.ConsumeIntegral<std::uint32_t>() | 1;
        break;
    }
    // The descriptor.
    int file = -1, pass = -1;
    bool regular = true;
    auto fill = [&](int fd) {
        FUZZ_CHECK(ftruncate(fd, static_cast<off_t>(b.file_size)) == 0);
        if (pad < b.file_size && !content.empty()) {
            const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(content.size(), b.file_size - pad));
            FUZZ_CHECK(pwrite(fd, content.data(), n, static_cast<off_t>(pad)) == static_cast<ssize_t>(n));
        }
    };
    if (desc == Desc::read_only || desc == Desc::write_only) {
        file = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (file < 0) desc = Desc::memfd;  // no O_TMPFILE on /tmp: a memfd instead
    }
    if (desc == Desc::memfd || desc == Desc::sealed) {
        file = memfd_create("sigverify-fuzz-reg", MFD_CLOEXEC | (desc == Desc::sealed ? MFD_ALLOW_SEALING : 0));
        FUZZ_CHECK(file >= 0);
    }
    if (file >= 0) {
        fill(file);
        pass = file;
        if (desc == Desc::sealed) {
            FUZZ_CHECK(fcntl(file, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) == 0);
            b.sealed = true;
        }
        if (desc == Desc::read_only || desc == Desc::write_only) {
            const std::string path = "/proc/self/fd/" + std::to_string(file);
            pass = open(path.c_str(), (desc == Desc::read_only ? O_RDONLY : O_WRONLY) | O_CLOEXEC);
            FUZZ_CHECK(pass >= 0);
        }
    }
    int pipe_fds[2] = {-1, -1};
    switch (desc) {
    case Desc::none: regular = false; break;
    case Desc::socket: pass = sock_; regular = false; break;
    case Desc::pipe:
        FUZZ_CHECK(pipe2(pipe_fds, O_CLOEXEC) == 0);
        pass = pipe_fds[0];
        regular = false;
        break;
    case Desc::directory:
        pass = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        FUZZ_CHECK(pass >= 0);
        regular = false;
        break;
    default: break;
    }
    // What the daemon must answer. The limits count the buffers it holds:
    // one the client shrank may be dropped already, so both counts are
    // bounds, and only a limit that holds for both is certain.
    std::uint64_t count_min = 0, count_max = 0, bytes_min = 0, bytes_max = 0;
    for (const auto& [id, known] : buffers_) {
        if (!known.live) continue;
        ++count_max;
        bytes_max += known.size;
        if (!known.shrunk) {
            ++count_min;
            bytes_min += known.size;
        }
    }
    auto over = [&](std::uint64_t count, std::uint64_t bytes) {
        return count >= kMaxRegistered || size > kMaxRegisteredBytes || bytes > kMaxRegisteredBytes - size;
    };
    std::set<shm::Status> allowed;
    // A write-only descriptor cannot be read (pread): refused as an argument,
    // before the range and the limits are looked at.
    if (flags != 0 || pass < 0 || !regular || desc == Desc::write_only || size == 0 || offset > fs ||
        size > fs - offset) {
        allowed.insert(shm::Status::invalid_argument);
    } else if (over(count_min, bytes_min)) {
        allowed.insert(shm::Status::too_large);
    } else {
        allowed.insert(shm::Status::ok);
        if (over(count_max, bytes_max)) allowed.insert(shm::Status::too_large);
    }
    shm::RegisterRequest req{shm::kRegisterMagic, flags, offset, size};
    shm::RegisterReply reply{};
    const bool up = control(&req, sizeof req, pass, reply);
    if (pass >= 0 && pass != file && pass != sock_) close(pass);
    if (pipe_fds[1] >= 0) close(pipe_fds[1]);
    if (debug())
        std::fprintf(stderr,
                     "register (descriptor kind %d, file %llu bytes, range %llu +%llu, flags %u): %s status %u id %llu '%s'\n",
                     static_cast<int>(desc), static_cast<unsigned long long>(fs),
                     static_cast<unsigned long long>(offset), static_cast<unsigned long long>(size), flags,
                     up ? "reply" : "session ended,", reply.status, static_cast<unsigned long long>(reply.buffer_id),
                     reply.error);
    if (!up) {
        if (file >= 0) close(file);
        return;
    }
    FUZZ_CHECK(reply.magic == shm::kRegisterReplyMagic);
    const auto status = static_cast<shm::Status>(reply.status);
    if (allowed.count(status) == 0) {
        std::fprintf(stderr, "register: status %u, expected %u%s\n", reply.status,
                     static_cast<unsigned>(*allowed.begin()), allowed.size() > 1 ? " (or another bound)" : "");
        std::abort();
    }
    if (status != shm::Status::ok) {
        FUZZ_CHECK(reply.buffer_id == 0);
        FUZZ_CHECK(!shm::read_text(reply.error).empty());
        FUZZ_CHECK(reply.detail == 0u);  // invalid_argument and too_large carry no errno
        if (file >= 0) close(file);
        return;
    }
    // A new id: never 0, never one this session handed out before.
    FUZZ_CHECK(reply.buffer_id != 0 && buffers_.count(reply.buffer_id) == 0);
    FUZZ_CHECK(reply.detail == 0 && shm::read_text(reply.error).empty());
    b.file = file;
    b.offset = offset;
    b.size = size;
    // Columns before the range, or cut by it, are not the pool's rows.
    if (b.rows != 0 && (pad < offset || end > offset + size)) b.rows = 0;
    b.message -= std::min(b.message, offset);
    b.key -= std::min(b.key, offset);
    b.signature -= std::min(b.signature, offset);
    struct stat st{};
    FUZZ_CHECK(fstat(file, &st) == 0);
    registered_files.emplace_back(st.st_dev, st.st_ino);
    buffers_.emplace(reply.buffer_id, b);
}

std::uint64_t Client::known_id(std::uint8_t pick, bool live_only) const {
    std::vector<std::uint64_t> ids;
    for (const auto& [id, b] : buffers_)
        if (b.live || !live_only) ids.push_back(id);
    return ids.empty() ? 0 : ids[pick % ids.size()];
}

void Client::unregister_buffer() {
    const std::uint8_t f = in_.ConsumeIntegral<std::uint8_t>();
    std::uint64_t id;
    switch (f % 4) {
    case 0:
    case 1: id = known_id(f >> 2, true); break;
    case 2: id = known_id(f >> 2, false); break;
    default: id = (f & 0x80) ? in_.ConsumeIntegral<std::uint64_t>() : (buffers_.empty() ? 1 : buffers_.rbegin()->first + 1); break;
    }
    shm::UnregisterRequest req{shm::kUnregisterMagic, (f & 0xC0) == 0x40 ? in_.ConsumeIntegral<std::uint32_t>() | 1 : 0u, id};
    shm::RegisterReply reply{};
    if (!control(&req, sizeof req, -1, reply)) return;
    if (debug())
        std::fprintf(stderr, "unregister %llu (flags %u): status %u\n", static_cast<unsigned long long>(id), req.flags,
                     reply.status);
    FUZZ_CHECK(reply.magic == shm::kUnregisterReplyMagic);
    FUZZ_CHECK(reply.buffer_id == id);
    FUZZ_CHECK(reply.detail == 0);
    auto b = buffers_.find(id);
    const bool live = b != buffers_.end() && b->second.live;
    if (req.flags != 0) {
        FUZZ_CHECK(reply.status == static_cast<std::uint32_t>(shm::Status::invalid_argument));
    } else if (live && b->second.shrunk) {
        FUZZ_CHECK(reply.status == static_cast<std::uint32_t>(shm::Status::ok) ||
                   reply.status == static_cast<std::uint32_t>(shm::Status::not_found));
        b->second.live = false;
    } else if (live) {
        FUZZ_CHECK(reply.status == static_cast<std::uint32_t>(shm::Status::ok));
        b->second.live = false;
    } else {
        FUZZ_CHECK(reply.status == static_cast<std::uint32_t>(shm::Status::not_found));
    }
}

void Client::submit_registered() {
    const std::uint8_t f = in_.ConsumeIntegral<std::uint8_t>();
    std::uint64_t id;
    switch (f % 4) {
    case 0:
    case 1: id = known_id(in_.ConsumeIntegral<std::uint8_t>(), true); break;
    case 2: id = known_id(in_.ConsumeIntegral<std::uint8_t>(), false); break;
    default: id = in_.ConsumeBool() ? in_.ConsumeIntegral<std::uint64_t>() : in_.ConsumeIntegralInRange<std::uint64_t>(0, 8); break;
    }
    const auto known = buffers_.find(id);
    const Buffer* b = known != buffers_.end() ? &known->second : nullptr;
    shm::SubmissionEntry e{};
    e.opcode = static_cast<std::uint8_t>(shm::Opcode::verify_registered_columns);
    shm::RegisteredColumnOffsets o{};
    o.buffer_id = id;
    std::optional<std::uint64_t> valid;
    if (b != nullptr && b->rows != 0 && (f & 4) == 0) {
        const auto t = static_cast<wire::Table>(b->table);
        const wire::RecordKind kind = wire::record_kind(t);
        e.record_kind = static_cast<std::uint8_t>(kind);
        e.encoding = static_cast<std::uint8_t>(pool_encoding(b->table));
        e.table = (f & 8) ? static_cast<std::uint8_t>(t) : shm::kTableUnspecified;
        const std::uint64_t s = in_.ConsumeIntegralInRange<std::uint64_t>(0, b->rows);
        e.row_count = in_.ConsumeIntegralInRange<std::uint64_t>(0, b->rows - s + ((f & 0x10) ? 2 : 0));
        e.rows_offset = b->message + s * wire::kColumnMessageWidth;
        o.key_offset = b->key + s * wire::column_key_width(kind);
        o.signature_offset = b->signature + s * wire::kColumnSignatureWidth;
        if (s + e.row_count <= b->rows) {
            std::uint64_t v = 0;
            for (std::uint64_t i = 0; i < e.row_count; ++i) v += world->verdict[b->table][b->first + s + i];
            valid = v;
        }
    } else {
        const std::uint64_t room = b != nullptr ? b->size + 8 : 8192;
        auto offset = [&] {
            return in_.ConsumeBool() ? in_.ConsumeIntegralInRange<std::uint64_t>(0, room) : in_.ConsumeIntegral<std::uint64_t>();
        };
        e.record_kind = (f >> 3) & 1;
        e.encoding = e.record_kind == 0 ? ((f >> 4) & 1) : 0;
        e.table = shm::kTableUnspecified;
        e.row_count = in_.ConsumeBool() ? in_.ConsumeIntegralInRange<std::uint64_t>(0, 40) : in_.ConsumeIntegral<std::uint64_t>();
        e.rows_offset = offset();
        o.key_offset = offset();
        o.signature_offset = offset();
    }
    e.results_offset = in_.ConsumeBool() ? in_.ConsumeIntegralInRange<std::uint64_t>(0, seg_.arena_size + 8)
                                         : in_.ConsumeIntegral<std::uint64_t>();
    if ((f & 0xE0) == 0xE0) {  // what a registered batch may not ask: collect, a tail, unknown flags
        e.mode = in_.ConsumeIntegral<std::uint8_t>() % 3;
        e.key_size = in_.ConsumeIntegral<std::uint8_t>() % 3;
        e.flags = in_.ConsumeIntegral<std::uint16_t>();
    }
    shm::set_registered_offsets(e, o);
    push(e, valid);
}

void Client::submit_registered_set() {
    const std::uint8_t f = in_.ConsumeIntegral<std::uint8_t>();
    std::uint64_t ids[3];
    for (std::uint64_t& id : ids)
        id = (f & 1) ? in_.ConsumeIntegralInRange<std::uint64_t>(0, 8) : known_id(in_.ConsumeIntegral<std::uint8_t>(), true);
    shm::SubmissionEntry e{};
    e.opcode = static_cast<std::uint8_t>(shm::Opcode::verify_registered_column_set);
    e.table = shm::kTableUnspecified;
    shm::RegisteredColumnSet set{};
    std::optional<std::uint64_t> valid;
    const auto b0 = buffers_.find(ids[0]);
    if (b0 != buffers_.end() && b0->second.rows != 0 && (f & 2) == 0) {
        // Pool rows: each column from its own buffer where that buffer holds
        // the same rows of the same table, else from the first one.
        const Buffer& b = b0->second;
        const wire::RecordKind kind = wire::record_kind(static_cast<wire::Table>(b.table));
        e.record_kind = static_cast<std::uint8_t>(kind);
        e.encoding = static_cast<std::uint8_t>(pool_encoding(b.table));
        const std::uint64_t first = in_.ConsumeIntegralInRange<std::uint64_t>(0, b.rows);
        e.row_count = in_.ConsumeIntegralInRange<std::uint64_t>(0, b.rows - first + ((f & 4) ? 2 : 0));
        for (std::uint64_t& id : ids) {
            const auto o = buffers_.find(id);
            if (o == buffers_.end() || o->second.table != b.table || o->second.first != b.first ||
                o->second.rows != b.rows)
                id = ids[0];
        }
        set.message = {ids[0], buffers_[ids[0]].message + first * wire::kColumnMessageWidth};
        set.key = {ids[1], buffers_[ids[1]].key + first * wire::column_key_width(kind)};
        set.signature = {ids[2], buffers_[ids[2]].signature + first * wire::kColumnSignatureWidth};
        if (first + e.row_count <= b.rows) {
            std::uint64_t v = 0;
            for (std::uint64_t i = 0; i < e.row_count; ++i) v += world->verdict[b.table][b.first + first + i];
            valid = v;
        }
    } else {
        e.record_kind = (f >> 3) & 1;
        e.row_count = in_.ConsumeIntegralInRange<std::uint64_t>(0, 40);
        set.message = {ids[0], in_.ConsumeIntegralInRange<std::uint64_t>(0, 8192)};
        set.key = {ids[1], in_.ConsumeIntegralInRange<std::uint64_t>(0, 8192)};
        set.signature = {ids[2], in_.ConsumeIntegral<std::uint64_t>()};
        if (f & 0x10) set.reserved[f >> 7] = in_.ConsumeIntegral<std::uint64_t>() | 1;
    }
    // The set and the results somewhere in the arena (the set not always
    // aligned, the results may overlap it: the daemon copied it out first).
    e.rows_offset = in_.ConsumeIntegralInRange<std::uint64_t>(0, seg_.arena_size - 1) & ((f & 0x20) ? ~7ull : ~0ull);
    e.results_offset = in_.ConsumeIntegralInRange<std::uint64_t>(0, seg_.arena_size);
    if (e.rows_offset + sizeof set <= seg_.arena_size)
        write_arena(e.rows_offset, reinterpret_cast<const std::uint8_t*>(&set), sizeof set);
    if (debug())
        std::fprintf(stderr, "column set at %llu: buffers %llu %llu %llu, %llu rows\n",
                     static_cast<unsigned long long>(e.rows_offset), static_cast<unsigned long long>(set.message.buffer_id),
                     static_cast<unsigned long long>(set.key.buffer_id),
                     static_cast<unsigned long long>(set.signature.buffer_id),
                     static_cast<unsigned long long>(e.row_count));
    push(e, valid, ids);
}

void Client::shrink_buffer() {
    const std::uint64_t id = known_id(in_.ConsumeIntegral<std::uint8_t>(), false);
    const std::uint8_t f = in_.ConsumeIntegral<std::uint8_t>();
    if (id != 0) {
        Buffer& b = buffers_[id];
        std::uint64_t keep = in_.ConsumeIntegralInRange<std::uint64_t>(0, b.file_size);
        if (f & 1) keep &= ~std::uint64_t(4095);
        const int r = ftruncate(b.file, static_cast<off_t>(keep));
        FUZZ_CHECK(r == 0 || (b.sealed && errno == EPERM));
        if (r == 0) {
            b.file_size = keep;
            if (keep < b.offset + b.size) b.shrunk = true;
        }
        if (debug())
            std::fprintf(stderr, "buffer %llu cut to %llu bytes%s\n", static_cast<unsigned long long>(id),
                         static_cast<unsigned long long>(keep), r == 0 ? "" : " (sealed: refused)");
    }
    if (f & 2) bell();
}

void Client::rewrite_buffer() {
    const std::uint64_t id = known_id(in_.ConsumeIntegral<std::uint8_t>(), false);
    const auto bytes = in_.ConsumeBytes<std::uint8_t>(in_.ConsumeIntegralInRange<std::size_t>(1, 64));
    if (id == 0 || bytes.empty()) return;
    Buffer& b = buffers_[id];
    if (b.sealed) return;
    const std::uint64_t at = b.offset + in_.ConsumeIntegralInRange<std::uint64_t>(0, b.size - 1);
    if (at < b.file_size) {
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(bytes.size(), b.file_size - at));
        FUZZ_CHECK(pwrite(b.file, bytes.data(), n, static_cast<off_t>(at)) == static_cast<ssize_t>(n));
        b.rewritten = true;
    }
}

}  // namespace sigverify::fuzz
