// SPDX-License-Identifier: MIT
// Sparse registered buffers must not make the daemon allocate the client's
// memory (issue 29, defect 4), against a real sigverifyd and a real client:
// a client registers a 1 GiB memfd it only ftruncated (a hole but for a few
// known rows at its start) and has the daemon verify column batches that
// cover the whole file, register -> batch -> unregister, twice on the same
// memfd and twice on fresh ones. Reading a page of a hole through a shared
// mapping would allocate it in the memfd (charged to the daemon's cgroup, and
// kept after the unregister while the client holds the memfd): the memfd's
// allocated blocks and the daemon's peak resident size must stay what the
// client wrote and what the daemon's own staging needs, whatever the size
// registered. The verdicts stay exact: the known rows as known, the hole's
// rows (all-zero keys) invalid. And the descriptor the daemon keeps of each
// registration instead of a mapping is budgeted: a registration past what
// RLIMIT_NOFILE leaves is refused, never a session.
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "batch_check.hpp"
#include "daemon_fixture.hpp"
#include "support/proc_probes.hpp"
#include "reference/columns.hpp"

using namespace sigverify;
using namespace sigverify::test;
using shm::Status;
using wire::SigEncoding;
using wire::Table;

namespace {

constexpr std::uint64_t kMiB = std::uint64_t(1) << 20;
constexpr std::uint64_t kFileSize = std::uint64_t(1) << 30;

// Bytes the file system allocated for the memfd (a hole has none).
std::uint64_t allocated_bytes(int fd) {
    struct stat st;
    return fstat(fd, &st) == 0 ? std::uint64_t(st.st_blocks) * 512 : ~std::uint64_t(0);
}

// Known ECDSA rows as columns at the start of the memfd; the rest of the
// kFileSize bytes a hole.
struct SparseImage {
    KnownRows known;
    RegisteredColumns cols;   // the known rows
    RegisteredColumns holes;  // as many rows as the file holds, over the hole
};

SparseImage make_sparse(std::size_t n) {
    SparseImage img;
    img.known = make_known_rows(Table::ecdsa, n, SigEncoding::opaque, 4029);
    const reference::ColumnTable t = reference::rows_to_columns(
        span_of(Table::ecdsa, SigEncoding::opaque, img.known.rows, n), reference::CorrelateLayout::none);
    img.cols.kind = t.kind;
    img.cols.encoding = SigEncoding::opaque;
    img.cols.count = n;
    img.cols.message_offset = 0;
    img.cols.key_offset = t.message.size();
    img.cols.signature_offset = t.message.size() + t.key.size();
    // The hole rows start past the known ones (page aligned) and fill the file.
    const std::uint64_t start = 4 * kMiB;
    const std::uint64_t rows = (kFileSize - start) / wire::record_size(wire::RecordKind::ecdsa);
    img.holes.kind = wire::RecordKind::ecdsa;
    img.holes.encoding = SigEncoding::opaque;
    img.holes.count = rows;
    img.holes.message_offset = start;
    img.holes.key_offset = start + rows * wire::kColumnMessageWidth;
    img.holes.signature_offset = img.holes.key_offset + rows * wire::column_key_width(wire::RecordKind::ecdsa);
    return img;
}

int write_sparse(const SparseImage& img, const reference::ColumnTable& t) {
    const int fd = memfd_create("sparse-registered", MFD_CLOEXEC);
    if (fd < 0) return -1;
    auto put = [&](const std::vector<std::uint8_t>& column, std::uint64_t offset) {
        return pwrite(fd, column.data(), column.size(), static_cast<off_t>(offset)) ==
               static_cast<ssize_t>(column.size());
    };
    if (!put(t.message, img.cols.message_offset) || !put(t.key, img.cols.key_offset) ||
        !put(t.signature, img.cols.signature_offset) || ftruncate(fd, static_cast<off_t>(kFileSize)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

}  // namespace

TEST_CASE("a sparse 1 GiB registered memfd costs the daemon no memory of its size (issue 29, defect 4)",
          "[reliability][hostile][registered]") {
    DaemonProcess d({"--cpu-threads", "1"});
    ClientOptions o;
    o.runtime_dir = d.dir();
    o.name = "sparse";
    auto c = Client::connect(o);
    const std::size_t n = 1000;
    SparseImage img = make_sparse(n);
    const reference::ColumnTable t = reference::rows_to_columns(
        span_of(Table::ecdsa, SigEncoding::opaque, img.known.rows, n), reference::CorrelateLayout::none);
    int fd = write_sparse(img, t);
    REQUIRE(fd >= 0);
    const std::uint64_t written = allocated_bytes(fd);
    REQUIRE(written < 2 * kMiB);
    // Staging memory, the CPU backend's contexts and the first batch's
    // buffers are the daemon's own; measured after a batch has run.
    CHECK(check_batch(*c, Table::ecdsa, wire::Mode::results, SigEncoding::opaque, 64, 1));
    const std::uint64_t hwm_before = status_bytes(d.pid(), "VmHWM");
    REQUIRE(hwm_before != 0);
    std::vector<std::uint8_t> known(n), holes(img.holes.count);
    for (int round = 0; round < 4; ++round) {
        INFO("round " << round);
        if (round >= 2) {
            // A fresh memfd each round from here on.
            close(fd);
            fd = write_sparse(img, t);
            REQUIRE(fd >= 0);
        }
        RegisteredBuffer b;
        REQUIRE(c->register_buffer(fd, 0, kFileSize, b) == Status::ok);
        const BatchResult rk = c->verify_registered_columns(b, img.cols, known.data());
        REQUIRE(rk.status == Status::ok);
        CHECK(rk.local_rows == 0);
        CHECK(known == img.known.expected);
        std::fill(holes.begin(), holes.end(), 0xAA);
        const BatchResult rh = c->verify_registered_columns(b, img.holes, holes.data());
        REQUIRE(rh.status == Status::ok);
        CHECK(rh.local_rows == 0);
        CHECK(rh.valid == 0);
        CHECK(rh.invalid == img.holes.count);
        CHECK(std::count(holes.begin(), holes.end(), 0) == static_cast<std::ptrdiff_t>(holes.size()));
        b.reset();  // unregistered
        // Nothing of the hole was allocated, by the daemon or anyone.
        const std::uint64_t allocated = allocated_bytes(fd);
        INFO("memfd allocated " << allocated / kMiB << " MiB of " << kFileSize / kMiB);
        CHECK(allocated == written);
        const std::uint64_t hwm = status_bytes(d.pid(), "VmHWM");
        INFO("daemon peak resident " << hwm_before / kMiB << " -> " << hwm / kMiB << " MiB; now RSS "
                                     << status_bytes(d.pid(), "VmRSS") / kMiB << " MiB, shmem "
                                     << status_bytes(d.pid(), "RssShmem") / kMiB << " MiB");
        // The staging of 65,536-row chunks and the verdicts of a batch this
        // size are far below this; a 1 GiB file read through a mapping is not.
        CHECK(hwm < hwm_before + 64 * kMiB);
    }
    close(fd);
    CHECK(check_batch(*c, Table::schnorr, wire::Mode::results, SigEncoding::opaque, 50, 5));
}

TEST_CASE("registrations past the descriptors RLIMIT_NOFILE leaves are refused, never an accept",
          "[reliability][hostile][registered]") {
    // The daemon keeps a descriptor of every registered buffer (it reads them
    // with pread). A daemon whose RLIMIT_NOFILE (360, soft and hard, set in a
    // child that starts it) leaves room for a few: the rest are refused with
    // system_error naming the limit, one unregistered makes room again, and
    // the daemon keeps accepting sessions and serving batches.
    struct Report {
        std::uint32_t accepted = 0;
        std::uint32_t refusal = 0;
        bool names_limit = false, room_again = false, served = false, warned = false;
    };
    int up[2];
    REQUIRE(pipe(up) == 0);
    const pid_t child = run_in_child([&] {
        close(up[0]);
        const rlimit low{360, 360};
        if (setrlimit(RLIMIT_NOFILE, &low) != 0) return false;
        Report rep;
        {
            DaemonProcess d({"--cpu-threads", "1", "--max-clients", "4", "--max-registered-buffers", "64"});
            ClientOptions o;
            o.runtime_dir = d.dir();
            o.name = "descriptors";
            auto c = Client::connect(o);
            const int fd = memfd_create("descriptor-budget", MFD_CLOEXEC);
            if (fd < 0 || ftruncate(fd, 4096) != 0) return false;
            std::vector<RegisteredBuffer> held;
            for (int i = 0; i < 64; ++i) {
                RegisteredBuffer b;
                const Status st = c->register_buffer(fd, 0, 4096, b);
                if (st != Status::ok) {
                    rep.refusal = static_cast<std::uint32_t>(st);
                    rep.names_limit = c->last_error().find("RLIMIT_NOFILE") != std::string::npos;
                    break;
                }
                held.push_back(std::move(b));
            }
            rep.accepted = static_cast<std::uint32_t>(held.size());
            if (!held.empty()) {
                held.pop_back();  // unregistered: its descriptor is the daemon's again
                RegisteredBuffer b;
                rep.room_again = c->register_buffer(fd, 0, 4096, b) == Status::ok;
            }
            auto other = Client::connect(o);
            rep.served = check_batch(*other, Table::ecdsa, wire::Mode::results, SigEncoding::opaque, 40, 3);
            rep.warned = d.log().find("registrations past them are refused") != std::string::npos;
            close(fd);
        }
        return write(up[1], &rep, sizeof rep) == static_cast<ssize_t>(sizeof rep);
    });
    close(up[1]);
    Report rep;
    const ssize_t got = read(up[0], &rep, sizeof rep);
    close(up[0]);
    CHECK(wait_child(child) == 0);
    REQUIRE(got == static_cast<ssize_t>(sizeof rep));
    INFO("accepted " << rep.accepted << " registrations");
    CHECK(rep.accepted >= 1);
    CHECK(rep.accepted < 64);
    CHECK(rep.refusal == static_cast<std::uint32_t>(Status::system_error));
    CHECK(rep.names_limit);
    CHECK(rep.room_again);
    CHECK(rep.served);
    CHECK(rep.warned);
}
