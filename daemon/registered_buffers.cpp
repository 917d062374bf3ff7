// SPDX-License-Identifier: MIT
#include "daemon/registered_buffers.hpp"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "daemon/mapping_guard.hpp"

namespace sigverify::daemon {

RegisteredMapping::RegisteredMapping(int fd, std::uint64_t offset, std::uint64_t size) {
    const std::uint64_t page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
    const std::uint64_t aligned = offset / page * page;
    // offset + size <= st_size was checked by the caller, so this cannot overflow.
    const std::uint64_t length = offset - aligned + size;
    void* p = mmap(nullptr, static_cast<std::size_t>(length), PROT_READ, MAP_SHARED, fd, static_cast<off_t>(aligned));
    if (p == MAP_FAILED) {
        errno_ = errno;
        return;
    }
    map_base_ = p;
    map_length_ = static_cast<std::size_t>(length);
    guard_slot_ = guard::register_buffer(p, map_length_);
    if (guard_slot_ < 0) {
        // Unguarded, a truncation would crash the daemon: refuse instead.
        munmap(map_base_, map_length_);
        map_base_ = nullptr;
        guard_full_ = true;
        return;
    }
    data_ = static_cast<const std::uint8_t*>(p) + (offset - aligned);
    size_ = size;
}

RegisteredMapping::~RegisteredMapping() {
    if (map_base_ == nullptr) return;
    guard::unregister_mapping(guard_slot_);
    munmap(map_base_, map_length_);
}

bool RegisteredMapping::lost() const { return guard::poisoned(guard_slot_); }

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
    auto mapping = std::make_shared<RegisteredMapping>(fd, offset, size);
    if (mapping->guard_full())
        return refuse(shm::Status::system_error,
                      "no free slot in the daemon's SIGBUS guard for another registered buffer", ENOSPC);
    if (mapping->data() == nullptr) {
        const int e = mapping->error_number();
        return refuse(shm::Status::system_error, std::string("mmap failed: ") + std::strerror(e), std::uint32_t(e));
    }
    std::lock_guard lock(mu_);
    out.id = next_id_++;
    bytes_ += size;
    buffers_.emplace(out.id, std::move(mapping));
    return out;
}

shm::Status RegisteredBuffers::remove(std::uint64_t id) {
    std::shared_ptr<const RegisteredMapping> dropped;  // unmapped outside the lock
    std::lock_guard lock(mu_);
    auto it = buffers_.find(id);
    if (it == buffers_.end()) return shm::Status::not_found;
    bytes_ -= it->second->size();
    dropped = std::move(it->second);
    buffers_.erase(it);
    return shm::Status::ok;
}

std::shared_ptr<const RegisteredMapping> RegisteredBuffers::find(std::uint64_t id) const {
    std::lock_guard lock(mu_);
    auto it = buffers_.find(id);
    return it == buffers_.end() ? nullptr : it->second;
}

void RegisteredBuffers::clear() {
    std::map<std::uint64_t, std::shared_ptr<const RegisteredMapping>> dropped;
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
