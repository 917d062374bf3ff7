// SPDX-License-Identifier: MIT
#include "daemon/memory/registered_buffers.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>

namespace sigverify::daemon {
namespace {

std::atomic<std::uint64_t> g_descriptor_budget{std::numeric_limits<std::uint64_t>::max()};
std::atomic<std::uint64_t> g_descriptors_held{0};

// One descriptor from the budget, or false when it is spent.
bool take_descriptor() {
    std::uint64_t held = g_descriptors_held.load(std::memory_order_relaxed);
    do {
        if (held >= g_descriptor_budget.load(std::memory_order_relaxed)) return false;
    } while (!g_descriptors_held.compare_exchange_weak(held, held + 1, std::memory_order_relaxed));
    return true;
}

void give_back_descriptor() { g_descriptors_held.fetch_sub(1, std::memory_order_relaxed); }

}  // namespace

void set_registered_descriptor_budget(std::uint64_t descriptors) {
    g_descriptor_budget.store(descriptors, std::memory_order_relaxed);
}

std::uint64_t registered_descriptors_held() { return g_descriptors_held.load(std::memory_order_relaxed); }

RegisteredFile::~RegisteredFile() {
    ::close(fd_);
    give_back_descriptor();
}

bool RegisteredFile::read(std::uint64_t at, std::size_t length, std::uint8_t* out) const noexcept {
    if (lost()) return false;
    // Callers checked the range; a range past it would be a daemon bug, and
    // a non-verdict (lost) is the only safe answer to it.
    if (at > size_ || length > size_ - at) {
        lost_.store(true, std::memory_order_release);
        return false;
    }
    // offset_ + size_ <= the file's size at registration (an off_t), so the
    // file offsets below cannot overflow.
    std::uint64_t done = 0;
    while (done < length) {
        const ssize_t got =
            ::pread(fd_, out + done, length - done, static_cast<off_t>(offset_ + at + done));
        if (got > 0) {
            done += static_cast<std::uint64_t>(got);
            continue;
        }
        if (got < 0 && errno == EINTR) continue;
        // 0: end of file before the range's end (the file shrank); < 0: unreadable.
        lost_.store(true, std::memory_order_release);
        return false;
    }
    return true;
}

RegisterOutcome RegisteredBuffers::add(int fd, std::uint64_t offset, std::uint64_t size) {
    RegisterOutcome out;
    auto refuse = [&](shm::Status st, std::string why, std::uint32_t detail = 0) {
        out.status = st;
        out.error = std::move(why);
        out.detail = detail;
        return out;
    };
    if (fd < 0) return refuse(shm::Status::invalid_argument, "no descriptor was passed with the request");
    struct stat st;
    if (fstat(fd, &st) != 0) return refuse(shm::Status::system_error, "fstat failed", std::uint32_t(errno));
    // Regular files only (a memfd is one): never a device, socket or pipe.
    if (!S_ISREG(st.st_mode)) return refuse(shm::Status::invalid_argument, "not a regular file or memfd");
    const int access = fcntl(fd, F_GETFL);
    if (access < 0 || (access & O_ACCMODE) == O_WRONLY)
        return refuse(shm::Status::invalid_argument, "the descriptor is not open for reading");
    const std::uint64_t file_size = st.st_size > 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
    if (size == 0) return refuse(shm::Status::invalid_argument, "size 0");
    if (offset > file_size || size > file_size - offset)
        return refuse(shm::Status::invalid_argument, "range [" + std::to_string(offset) + ", +" +
                                                         std::to_string(size) + ") passes the end of the file (" +
                                                         std::to_string(file_size) + " bytes)");
    {
        std::lock_guard lock(mu_);
        if (buffers_.size() >= max_count_)
            return refuse(shm::Status::too_large,
                          "this session holds " + std::to_string(buffers_.size()) +
                              " registered buffers, the daemon's limit (--max-registered-buffers)");
        if (size > max_bytes_ || bytes_ > max_bytes_ - size)
            return refuse(shm::Status::too_large, std::to_string(bytes_) + " + " + std::to_string(size) +
                                                      " registered bytes pass the daemon's limit of " +
                                                      std::to_string(max_bytes_) + " (--max-registered-bytes)");
    }
    if (!take_descriptor())
        return refuse(shm::Status::system_error,
                      "the daemon holds as many registered buffers as its descriptor limit leaves room for "
                      "(RLIMIT_NOFILE, LimitNOFILE=)",
                      EMFILE);
    const int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (own < 0) {
        const int e = errno;
        give_back_descriptor();
        return refuse(shm::Status::system_error, std::string("cannot keep the descriptor: ") + std::strerror(e),
                      std::uint32_t(e));
    }
    std::shared_ptr<const RegisteredFile> file;
    try {
        file = std::make_shared<const RegisteredFile>(own, offset, size);  // owns own and the descriptor taken
    } catch (...) {
        ::close(own);
        give_back_descriptor();
        return refuse(shm::Status::system_error, "out of memory", ENOMEM);
    }
    std::lock_guard lock(mu_);
    out.id = next_id_++;
    bytes_ += size;
    buffers_.emplace(out.id, std::move(file));
    return out;
}

shm::Status RegisteredBuffers::remove(std::uint64_t id) {
    std::shared_ptr<const RegisteredFile> dropped;  // closed outside the lock
    std::lock_guard lock(mu_);
    auto it = buffers_.find(id);
    if (it == buffers_.end()) return shm::Status::not_found;
    bytes_ -= it->second->size();
    dropped = std::move(it->second);
    buffers_.erase(it);
    return shm::Status::ok;
}

std::shared_ptr<const RegisteredFile> RegisteredBuffers::find(std::uint64_t id) const {
    std::lock_guard lock(mu_);
    auto it = buffers_.find(id);
    return it == buffers_.end() ? nullptr : it->second;
}

shm::Status RegisteredBuffers::columns_for(shm::CheckedSubmission& c, RegisteredColumnSource& out,
                                           std::uint32_t* detail) {
    std::shared_ptr<const RegisteredFile> file = find(c.buffer_id);
    if (file == nullptr) return shm::Status::not_found;
    if (file->lost()) {
        remove(c.buffer_id);
        return shm::Status::buffer_lost;
    }
    if (const shm::Status st = shm::check_registered_columns(c, file->size(), detail); st != shm::Status::ok)
        return st;
    out.message = {file, c.rows_offset, c.buffer_id};
    out.key = {file, c.key_offset, c.buffer_id};
    out.signature = {file, c.signature_offset, c.buffer_id};
    return shm::Status::ok;
}

shm::Status RegisteredBuffers::columns_for_set(shm::CheckedSubmission& c, const shm::RegisteredColumnSet& set,
                                               RegisteredColumnSource& out, std::uint32_t* detail) {
    const shm::RegisteredColumnRef* refs[3] = {&set.message, &set.key, &set.signature};
    RegisteredColumnSource::Column* cols[3] = {&out.message, &out.key, &out.signature};
    std::uint64_t sizes[3] = {0, 0, 0};
    for (int i = 0; i < 3; ++i) {
        std::shared_ptr<const RegisteredFile> file = find(refs[i]->buffer_id);
        if (file == nullptr) return shm::Status::not_found;
        if (file->lost()) {
            remove(refs[i]->buffer_id);
            return shm::Status::buffer_lost;
        }
        sizes[i] = file->size();
        *cols[i] = {std::move(file), refs[i]->offset, refs[i]->buffer_id};
    }
    if (const shm::Status st = shm::check_registered_column_set(c, set, sizes, detail); st != shm::Status::ok) {
        out.reset();
        return st;
    }
    return shm::Status::ok;
}

bool RegisteredBuffers::drop_lost(const RegisteredColumnSource& src) {
    bool any = false;
    for (const RegisteredColumnSource::Column* col : {&src.message, &src.key, &src.signature}) {
        if (col->file == nullptr || !col->file->lost()) continue;
        any = true;
        remove(col->buffer_id);  // not_found once dropped (two columns in one buffer)
    }
    return any;
}

void RegisteredBuffers::clear() {
    std::map<std::uint64_t, std::shared_ptr<const RegisteredFile>> dropped;
    {
        std::lock_guard lock(mu_);
        dropped.swap(buffers_);
        bytes_ = 0;
    }
}

std::uint64_t RegisteredBuffers::bytes() const {
    std::lock_guard lock(mu_);
    return bytes_;
}

std::size_t RegisteredBuffers::count() const {
    std::lock_guard lock(mu_);
    return buffers_.size();
}

}  // namespace sigverify::daemon
