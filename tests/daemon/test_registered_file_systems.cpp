// SPDX-License-Identifier: MIT
// Registered buffers only from files whose reads the kernel answers itself
// (issue 44.2): a memfd or a file on a local file system. A FUSE file whose
// reads are never answered once blocked both workers inside pread (honest
// clients starved, the watchdog ping withheld); a sysfs attribute is no
// table either. Both are refused at registration, with a reason the client
// reports (invalid_argument, never a verdict), and honest clients are served.
// The FUSE server here is a minimal one over /dev/fuse (root only: the case
// is skipped elsewhere); it answers lookups, attributes, statfs and opens,
// and never a read. On the unfixed daemon the case fails: both registrations
// are taken, the honest batch times out and the watchdog pings stop.
#include <fcntl.h>
#include <linux/fuse.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <cerrno>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "batch_check.hpp"
#include "daemon_fixture.hpp"
#include "ops_helpers.hpp"
#include "raw_session.hpp"
#include "reference/columns.hpp"

using namespace sigverify;
using namespace sigverify::test;
using shm::Status;

namespace {

// A FUSE mount holding one 1 MiB file "f" whose reads never return.
class SilentFuse {
public:
    SilentFuse() : dir_(make_temp_dir()) {
        dev_ = ::open("/dev/fuse", O_RDWR | O_CLOEXEC);
        if (dev_ < 0) return;
        const std::string opts = "fd=" + std::to_string(dev_) + ",rootmode=40000,user_id=0,group_id=0";
        if (::mount("silent", dir_.c_str(), "fuse", MS_NOSUID | MS_NODEV, opts.c_str()) != 0) return;
        mounted_ = true;
        server_ = std::thread([this] { serve(); });
    }
    ~SilentFuse() {
        abort();
        ::rmdir(dir_.c_str());
    }
    // Stops the server, unmounts and closes /dev/fuse (its last descriptor,
    // which aborts the connection): unanswered requests end with an error.
    void abort() {
        stop_ = true;
        if (server_.joinable()) server_.join();
        if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
        mounted_ = false;
        if (dev_ >= 0) ::close(dev_);
        dev_ = -1;
    }
    bool mounted() const { return mounted_; }
    std::string file() const { return dir_ + "/f"; }

private:
    void reply(std::uint64_t unique, int error, const void* body, std::size_t size) {
        std::vector<std::uint8_t> out(sizeof(fuse_out_header) + size);
        fuse_out_header h{static_cast<std::uint32_t>(out.size()), -error, unique};
        std::memcpy(out.data(), &h, sizeof h);
        if (size != 0) std::memcpy(out.data() + sizeof h, body, size);
        (void)!::write(dev_, out.data(), out.size());
    }
    static fuse_attr attr_of(std::uint64_t node) {
        fuse_attr a{};
        a.ino = node;
        a.mode = node == FUSE_ROOT_ID ? (S_IFDIR | 0755) : (S_IFREG | 0444);
        a.nlink = 1;
        a.size = node == FUSE_ROOT_ID ? 0 : 1 << 20;
        a.blksize = 4096;
        return a;
    }
    void serve() {
        std::vector<std::uint8_t> buf(1 << 20 | 1 << 16);
        while (!stop_) {
            pollfd p{dev_, POLLIN, 0};
            if (::poll(&p, 1, 50) <= 0) continue;
            const ssize_t got = ::read(dev_, buf.data(), buf.size());
            if (got < 0 && errno == EINTR) continue;
            if (got < static_cast<ssize_t>(sizeof(fuse_in_header))) return;  // unmounted or closed
            fuse_in_header in;
            std::memcpy(&in, buf.data(), sizeof in);
            const char* arg = reinterpret_cast<const char*>(buf.data() + sizeof in);
            switch (in.opcode) {
            case FUSE_INIT: {
                fuse_init_out o{};
                o.major = FUSE_KERNEL_VERSION;
                o.minor = FUSE_KERNEL_MINOR_VERSION;
                o.max_write = 4096;
                o.max_background = 1;
                o.time_gran = 1;
                reply(in.unique, 0, &o, sizeof o);
                break;
            }
            case FUSE_LOOKUP:
                if (std::strcmp(arg, "f") == 0) {
                    fuse_entry_out o{};
                    o.nodeid = 2;
                    o.attr = attr_of(2);
                    o.entry_valid = o.attr_valid = 3600;
                    reply(in.unique, 0, &o, sizeof o);
                } else {
                    reply(in.unique, ENOENT, nullptr, 0);
                }
                break;
            case FUSE_GETATTR: {
                fuse_attr_out o{};
                o.attr_valid = 3600;
                o.attr = attr_of(in.nodeid);
                reply(in.unique, 0, &o, sizeof o);
                break;
            }
            case FUSE_OPEN: {
                fuse_open_out o{};
                o.fh = 1;
                reply(in.unique, 0, &o, sizeof o);
                break;
            }
            case FUSE_STATFS: {
                fuse_statfs_out o{};
                reply(in.unique, 0, &o, sizeof o);
                break;
            }
            case FUSE_READ:  // never answered: the read waits for ever
            case FUSE_FORGET:
            case FUSE_BATCH_FORGET:
            case FUSE_INTERRUPT:
                break;
            case FUSE_FLUSH:
            case FUSE_RELEASE:
                reply(in.unique, 0, nullptr, 0);
                break;
            default:
                reply(in.unique, ENOSYS, nullptr, 0);
            }
        }
    }

    std::string dir_;
    int dev_ = -1;
    std::atomic<bool> stop_{false};
    bool mounted_ = false;
    std::thread server_;
};

ClientOptions options(const std::string& dir) {
    ClientOptions o;
    o.runtime_dir = dir;
    return o;
}

// An honest client's registered memfd batch: ok, every verdict the known one.
void honest_batch_served(Client& c) {
    KnownRows known = make_known_rows(wire::Table::ecdsa, 96, wire::SigEncoding::opaque, 44);
    const reference::ColumnTable t =
        reference::rows_to_columns(span_of(wire::Table::ecdsa, wire::SigEncoding::opaque, known.rows, 96),
                                   reference::CorrelateLayout::none);
    std::vector<std::uint8_t> bytes = t.message;
    RegisteredColumns cols;
    cols.kind = t.kind;
    cols.encoding = wire::SigEncoding::opaque;
    cols.count = 96;
    cols.key_offset = bytes.size();
    bytes.insert(bytes.end(), t.key.begin(), t.key.end());
    cols.signature_offset = bytes.size();
    bytes.insert(bytes.end(), t.signature.begin(), t.signature.end());
    const int fd = memfd_create("honest", MFD_CLOEXEC);
    REQUIRE(fd >= 0);
    REQUIRE(::write(fd, bytes.data(), bytes.size()) == ssize_t(bytes.size()));
    RegisteredBuffer buf;
    REQUIRE(c.register_buffer(fd, 0, bytes.size(), buf) == Status::ok);
    std::vector<std::uint8_t> out(96, 0xEE);
    const BatchResult r = c.verify_registered_columns(buf, cols, out.data());
    CHECK(r.status == Status::ok);
    CHECK(out == known.expected);
    CHECK(r.valid == known.valid);
    ::close(fd);
}

// NOTIFY_SOCKET and WATCHDOG_USEC for the daemons started while it lives.
struct WatchdogEnvironment {
    explicit WatchdogEnvironment(const std::string& path) {
        ::setenv("NOTIFY_SOCKET", path.c_str(), 1);
        ::setenv("WATCHDOG_USEC", "200000", 1);
    }
    ~WatchdogEnvironment() {
        ::unsetenv("NOTIFY_SOCKET");
        ::unsetenv("WATCHDOG_USEC");
    }
};

}  // namespace

// A hostile registration straight over the socket (the client library
// maps the file first, and sysfs refuses that): its reply.
std::string reply_error(const shm::RegisterReply& r) {
    return std::string(r.error, strnlen(r.error, sizeof r.error));
}

TEST_CASE("a sysfs attribute is refused as a registered buffer, with a reason", "[registered][hostile]") {
    const int fd = ::open("/sys/kernel/mm/transparent_hugepage/enabled", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        WARN("no sysfs attribute to open here; skipped");
        return;
    }
    struct stat st;
    REQUIRE(fstat(fd, &st) == 0);
    REQUIRE(S_ISREG(st.st_mode));
    REQUIRE(st.st_size >= 64);  // sysfs says 4096: the range check alone accepted it
    DaemonProcess d({"--cpu-threads", "2"});
    RawSession s;
    REQUIRE(s.handshake(d.socket_path()));
    const shm::RegisterReply r = raw_register(s, fd, 0, 64);
    CHECK(static_cast<Status>(r.status) == Status::invalid_argument);
    CHECK(r.buffer_id == 0);
    CHECK(reply_error(r).find("sysfs file system") != std::string::npos);
    CHECK(stats_counter(d.dir(), "registrations_refused_file_system") == 1);
    auto c = Client::connect(options(d.dir()));
    honest_batch_served(*c);
    ::close(fd);
}

TEST_CASE("a file on ext4 or tmpfs is still accepted as a registered buffer", "[registered]") {
    DaemonProcess d({"--cpu-threads", "2"});
    auto c = Client::connect(options(d.dir()));
    for (const std::string& path : {d.dir() + "/table", std::string("/dev/shm/sigverify-fs-test-") +
                                                              std::to_string(::getpid())}) {
        const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        REQUIRE(fd >= 0);
        ::unlink(path.c_str());
        std::vector<std::uint8_t> bytes(4096, 1);
        REQUIRE(::write(fd, bytes.data(), bytes.size()) == 4096);
        RegisteredBuffer buf;
        INFO(path);
        CHECK(c->register_buffer(fd, 0, 4096, buf) == Status::ok);
        ::close(fd);
    }
    CHECK(stats_counter(d.dir(), "registrations_refused_file_system") == 0);
}

TEST_CASE("a FUSE file whose reads never return is refused; honest clients served, the watchdog fed",
          "[registered][hostile]") {
    if (::geteuid() != 0 || ::access("/dev/fuse", R_OK | W_OK) != 0) {
        WARN("FUSE needs root and /dev/fuse here; skipped");
        return;
    }
    SilentFuse fuse;
    if (!fuse.mounted()) {
        WARN("cannot mount FUSE here (" << std::strerror(errno) << "); skipped");
        return;
    }
    const int fd = ::open(fuse.file().c_str(), O_RDONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    const std::string tmp = make_temp_dir();
    NotifySocket ns(tmp + "/notify.sock");
    {
        WatchdogEnvironment env(ns.path());
        DaemonProcess d({"--cpu-threads", "2"});
        RawSession hostile;
        REQUIRE(hostile.handshake(d.socket_path()));
        for (std::uint64_t k = 0; k < 2; ++k) {  // as many batches as the daemon has workers
            const shm::RegisterReply r = raw_register(hostile, fd, 0, 64 * 129);
            CHECK(static_cast<Status>(r.status) == Status::invalid_argument);
            INFO(reply_error(r));
            CHECK(reply_error(r).find("fuse file system") != std::string::npos);
            // The unfixed daemon took it: a batch of it blocks a worker inside pread.
            if (r.buffer_id != 0) hostile.submit(registered_entry(r.buffer_id, 0, 64 * 32, 64 * 65, k * 64, 64));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        ClientOptions o = options(d.dir());
        o.batch_timeout = std::chrono::milliseconds(5000);
        auto honest = Client::connect(o);
        honest_batch_served(*honest);
        // The watchdog: a ping every 100 ms (the gate withholds them only
        // while work is queued and no worker progresses).
        unsigned pings = 0;
        for (auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1000);
             std::chrono::steady_clock::now() < until;)
            if (ns.next(std::chrono::milliseconds(100)).find("WATCHDOG=1") != std::string::npos) ++pings;
        CHECK(pings >= 3);
        CHECK(stats_counter(d.dir(), "registrations_refused_file_system") == 2);
        fuse.abort();  // an unfixed daemon's reads end (the connection aborted): it can stop
    }
    ::close(fd);
    remove_tree(tmp);
}
