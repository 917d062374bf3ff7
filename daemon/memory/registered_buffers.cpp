// SPDX-License-Identifier: MIT
#include "daemon/memory/registered_buffers.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <string_view>

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

// File systems whose reads the kernel answers itself (memory, local disks):
// a worker's pread of them returns. FUSE (fuse, fuseblk, fuse.*), network
// and synthetic file systems are not here: their reads wait on another
// process or host, which may never answer.
constexpr std::array<std::string_view, 12> kLocalTypes = {"tmpfs", "ramfs", "hugetlbfs", "ext2", "ext3", "ext4",
                                                          "xfs",   "btrfs", "f2fs",      "zfs",  "overlay", "bcachefs"};
constexpr std::array<unsigned long, 10> kLocalMagics = {
    0x01021994 /* tmpfs */, 0x858458f6 /* ramfs */, 0x958458f6 /* hugetlbfs */, 0xEF53 /* ext2/3/4 */,
    0x58465342 /* xfs */,   0x9123683E /* btrfs */, 0xF2F52010 /* f2fs */,       0x2FC12FC1 /* zfs */,
    0x794C7630 /* overlay */, 0xCA451A4E /* bcachefs */};

// The file system type of fd's file, from this process's /proc/self/mountinfo
// alone (no request reaches the file's server, as fstatfs or fstat of a FUSE
// file would): first by the device of the superblock that answers the file's
// reads (statx with AT_STATX_DONT_SYNC, which a FUSE server never sees; an
// overlay file reports the layer it lies on), then by the mount it was opened
// through (fdinfo's mnt_id: a btrfs subvolume's device is no superblock's).
// Empty when neither is in this mount namespace: the mount belongs to another
// one (the unit's PrivateMounts= gives the daemon its own, with new mount ids).
std::string mount_type(int fd) {
    struct statx sx {};
    std::string dev;
    if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, 0, &sx) == 0)
        dev = std::to_string(sx.stx_dev_major) + ":" + std::to_string(sx.stx_dev_minor);
    std::ifstream info("/proc/self/fdinfo/" + std::to_string(fd));
    long mnt = -1;
    for (std::string line; mnt < 0 && std::getline(info, line);)
        if (line.rfind("mnt_id:", 0) == 0) mnt = std::strtol(line.c_str() + 7, nullptr, 10);
    std::ifstream mounts("/proc/self/mountinfo");
    std::string by_mount;
    for (std::string line; std::getline(mounts, line);) {
        // ID PARENT MAJ:MIN ROOT POINT OPTIONS [TAGS...] - TYPE SOURCE SUPER-OPTIONS
        const std::size_t dash = line.find(" - ");
        const std::size_t dev_at = line.find(' ', line.find(' ') + 1);
        if (dash == std::string::npos || dev_at == std::string::npos) continue;
        const std::size_t begin = dash + 3, end = line.find(' ', begin);
        std::string type = line.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
        if (!dev.empty() && line.compare(dev_at + 1, dev.size() + 1, dev + " ") == 0) return type;
        if (std::strtol(line.c_str(), nullptr, 10) == mnt) by_mount = std::move(type);
    }
    return by_mount;
}

// Empty when fd's reads never wait on anyone but the kernel: a memfd (it
// has seals), or a file on a local file system; else why not. Checked before
// any other call on fd (fstat of a FUSE file asks its server too).
std::string unsupported_file_system(int fd) {
    if (fcntl(fd, F_GET_SEALS) >= 0) return {};  // shmem or hugetlbfs: a memfd
    std::string type = mount_type(fd);
    if (type.empty()) {
        // Another mount namespace's mount: the superblock's magic instead. A
        // FUSE mount made in another namespace does not let the daemon in
        // (fuse_allow_current_process), so its statfs is answered by the
        // kernel (FUSE_SUPER_MAGIC) without asking its server.
        struct statfs fs;
        if (fstatfs(fd, &fs) != 0) return std::string("fstatfs failed: ") + std::strerror(errno);
        for (unsigned long m : kLocalMagics)
            if (static_cast<unsigned long>(fs.f_type) == m) return {};
        char hex[32];
        std::snprintf(hex, sizeof hex, "0x%lx", static_cast<unsigned long>(fs.f_type));
        type = hex;
    } else if (std::find(kLocalTypes.begin(), kLocalTypes.end(), type) != kLocalTypes.end()) {
        return {};
    }
    return "the file is on a " + type +
           " file system, whose reads may wait on another process or host; register a memfd or a file on a "
           "local file system (tmpfs, ext4, xfs, btrfs, ...)";
}

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
    if (std::string why = unsupported_file_system(fd); !why.empty()) {
        out.file_system = true;
        return refuse(shm::Status::invalid_argument, std::move(why));
    }
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
