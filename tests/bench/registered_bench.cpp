// SPDX-License-Identifier: MIT
// Registered buffers against the column copy API (docs/benchmarks-history.md §8): rows/s
// through a private sigverifyd, and the bytes the CLIENT process copies per
// row, measured, not derived: this program defines memcpy (the client
// library is linked in statically, so its copies come here) and counts the
// bytes copied while a call runs. The columns live in a memfd, as a node's
// mapped table file would: the copy path reads them from the caller's
// mapping and copies them into the arena; the registered path names them by
// offset and copies only the verdicts out.
//
// usage: sigverify_registered_bench SIGVERIFYD [--sizes 4096,65536,...] [--kind ecdsa|schnorr]
//                                   [--repeat N] [--daemon-arg ARG]... [--unparsable-keys 1]
//                                   [--per-column 1]
// Rows are 4096 distinct generated rows (1 in 64 invalid) repeated to fill
// each size; every verdict is checked against those of the distinct rows.
// --unparsable-keys 1 gives every row a key no parser accepts (ECDSA: prefix
// 0x00, refused at once; Schnorr: x = 0, refused after one square root): what
// the daemon spends is then staging and its own path, not signature checks.
// --per-column 1 adds a third path: each column in a memfd of its own
// (ring ABI 1.6, RegisteredColumnBuffers), as a store with a file per column.
#include <dlfcn.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "client/cli/daemon_process.hpp"
#include "reference/columns.hpp"
#include "reference/row_generator.hpp"
#include "sigverify/client.hpp"

namespace {

std::atomic<bool> g_counting{false};
std::atomic<std::uint64_t> g_copied{0};
using MemcpyFn = void* (*)(void*, const void*, std::size_t);
MemcpyFn g_real_memcpy = nullptr;

// A byte loop the compiler must not turn back into a memcpy call (used only
// while dlsym itself runs, before the real memcpy is known).
__attribute__((optimize("no-tree-loop-distribute-patterns"))) void* byte_copy(void* d, const void* s,
                                                                                std::size_t n) {
    auto* dst = static_cast<volatile unsigned char*>(d);
    const auto* src = static_cast<const unsigned char*>(s);
    for (std::size_t i = 0; i < n; ++i) dst[i] = src[i];
    return d;
}

}  // namespace

extern "C" void* memcpy(void* dst, const void* src, std::size_t n) {
    if (g_counting.load(std::memory_order_relaxed)) g_copied.fetch_add(n, std::memory_order_relaxed);
    if (g_real_memcpy == nullptr) {
        static std::atomic<bool> resolving{false};
        if (resolving.exchange(true)) return byte_copy(dst, src, n);
        g_real_memcpy = reinterpret_cast<MemcpyFn>(dlsym(RTLD_NEXT, "memcpy"));
        if (g_real_memcpy == nullptr) return byte_copy(dst, src, n);
    }
    return g_real_memcpy(dst, src, n);
}

namespace {

using namespace sigverify;
using Clock = std::chrono::steady_clock;

struct Figure {
    double rows_per_s = 0;
    double bytes_per_row = 0;
    double client_cpu_ns_per_row = 0;  // user + system time of this process (all its threads)
    bool verdicts_ok = true;
};

double cpu_seconds() {
    rusage u;
    getrusage(RUSAGE_SELF, &u);
    return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

template <class Call>
Figure measure(std::size_t n, int repeat, const std::vector<std::uint8_t>& want, std::vector<std::uint8_t>& results,
               Call&& call) {
    Figure f;
    double best = 1e100;
    for (int r = 0; r < repeat; ++r) {
        g_copied = 0;
        g_counting = true;
        const double cpu0 = cpu_seconds();
        const auto t0 = Clock::now();
        const BatchResult res = call();
        const double s = std::chrono::duration<double>(Clock::now() - t0).count();
        const double cpu = cpu_seconds() - cpu0;
        g_counting = false;
        if (!res.ok()) {
            std::fprintf(stderr, "call failed: %s\n", std::string(shm::to_string(res.status)).c_str());
            std::exit(1);
        }
        for (std::size_t i = 0; i < n; ++i)
            if (results[i] != want[i % want.size()]) f.verdicts_ok = false;
        if (s < best) {
            best = s;
            f.bytes_per_row = double(g_copied.load()) / double(n);
            f.client_cpu_ns_per_row = cpu * 1e9 / double(n);
        }
    }
    f.rows_per_s = double(n) / best;
    return f;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s SIGVERIFYD [--sizes a,b,...] [--kind ecdsa|schnorr] [--repeat N] "
                             "[--daemon-arg ARG]...\n", argv[0]);
        return 2;
    }
    std::vector<std::size_t> sizes = {4096, 65536};
    std::string kind_name = "ecdsa";
    int repeat = 3;
    bool unparsable = false;
    bool per_column = false;
    std::vector<std::string> daemon_args = {"--backend", "cpu"};
    for (int i = 2; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--sizes") {
            sizes.clear();
            for (char* p = argv[i + 1]; *p != '\0';) {
                sizes.push_back(std::strtoull(p, &p, 10));
                if (*p == ',') ++p;
            }
        } else if (a == "--kind") {
            kind_name = argv[i + 1];
        } else if (a == "--repeat") {
            repeat = std::atoi(argv[i + 1]);
        } else if (a == "--per-column") {
            per_column = std::atoi(argv[i + 1]) != 0;
        } else if (a == "--unparsable-keys") {
            unparsable = std::atoi(argv[i + 1]) != 0;
        } else if (a == "--daemon-arg") {
            daemon_args.push_back(argv[i + 1]);
        }
    }
    const bool ecdsa = kind_name == "ecdsa";
    const wire::Table table = ecdsa ? wire::Table::ecdsa : wire::Table::schnorr;

    // 4096 distinct rows; verdicts known from a local run of the same rows.
    reference::GenOptions g;
    g.table = table;
    g.count = 4096;
    g.tail_size = 0;
    g.invalid_rate = 1.0 / 64;
    g.seed = 7;
    std::vector<std::uint8_t> rows = reference::generate_rows(g);
    const wire::RowSpan span{wire::record_kind(table), 0, wire::SigEncoding::opaque, rows.data(), g.count};
    reference::ColumnTable distinct = reference::rows_to_columns(span, reference::CorrelateLayout::none);
    if (unparsable) {
        const std::size_t width = wire::column_key_width(distinct.kind);
        for (std::size_t i = 0; i < distinct.count; ++i)
            std::memset(distinct.key.data() + i * width, 0, ecdsa ? 1 : width);
    }

    cli::DaemonProcessOptions o;
    o.binary = argv[1];
    o.args = daemon_args;
    o.temp_template = "/tmp/sigverify-regbench-XXXXXX";
    cli::DaemonProcess daemon(o);
    ClientOptions co;
    co.runtime_dir = daemon.dir();
    co.name = "registered-bench";
    auto client = Client::connect(co);

    std::vector<std::uint8_t> want(g.count);
    {
        sigverify::Columns c;
        c.kind = distinct.kind;
        c.count = distinct.count;
        c.message = distinct.message.data();
        c.key = distinct.key.data();
        c.signature = distinct.signature.data();
        if (!client->run_columns(c, wire::Mode::results, want.data()).ok()) return 1;
    }

    std::printf("kind %s%s, daemon %s, client arena %llu bytes\n", kind_name.c_str(),
                unparsable ? " (unparsable keys)" : "", o.binary.c_str(),
                static_cast<unsigned long long>(client->arena_size()));
    std::printf("%10s  %12s %10s %12s  %12s %10s %12s  %s\n", "rows", "copy rows/s", "copy B/row", "copy cpu/row",
                "reg rows/s", "reg B/row", "reg cpu/row", "verdicts");
    const std::size_t kw = wire::column_key_width(distinct.kind);
    for (const std::size_t n : sizes) {
        // The columns of n rows in a memfd, mapped as a node maps its table file.
        const std::uint64_t bytes = std::uint64_t(n) * (32 + kw + 64);
        const int fd = memfd_create("registered-bench", MFD_CLOEXEC);
        if (fd < 0 || ftruncate(fd, static_cast<off_t>(bytes)) != 0) return 1;
        auto* map = static_cast<std::uint8_t*>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
        if (map == MAP_FAILED) return 1;
        std::uint8_t* message = map;
        std::uint8_t* key = map + std::uint64_t(n) * 32;
        std::uint8_t* signature = key + std::uint64_t(n) * kw;
        for (std::size_t i = 0; i < n; ++i) {
            const std::size_t j = i % g.count;
            std::memcpy(message + i * 32, distinct.message.data() + j * 32, 32);
            std::memcpy(key + i * kw, distinct.key.data() + j * kw, kw);
            std::memcpy(signature + i * 64, distinct.signature.data() + j * 64, 64);
        }
        std::vector<std::uint8_t> results(n);
        sigverify::Columns c;
        c.kind = distinct.kind;
        c.count = n;
        c.message = message;
        c.key = key;
        c.signature = signature;
        const Figure copy = measure(n, repeat, want, results,
                                    [&] { return client->run_columns(c, wire::Mode::results, results.data()); });
        RegisteredBuffer buf = client->register_buffer(fd, 0, bytes);
        RegisteredColumns rc;
        rc.kind = distinct.kind;
        rc.count = n;
        rc.message_offset = 0;
        rc.key_offset = std::uint64_t(n) * 32;
        rc.signature_offset = rc.key_offset + std::uint64_t(n) * kw;
        const Figure reg = measure(n, repeat, want, results,
                                   [&] { return client->verify_registered_columns(buf, rc, results.data()); });
        Figure split;
        if (per_column) {
            // The same columns copied into three memfds, one each.
            const std::uint64_t widths[3] = {32, kw, 64};
            const std::uint8_t* from[3] = {message, key, signature};
            int fds[3];
            RegisteredBuffer bufs[3];
            for (int k = 0; k < 3; ++k) {
                fds[k] = memfd_create("registered-bench-column", MFD_CLOEXEC);
                const std::uint64_t len = std::uint64_t(n) * widths[k];
                if (fds[k] < 0 || pwrite(fds[k], from[k], len, 0) != static_cast<ssize_t>(len)) return 1;
                bufs[k] = client->register_buffer(fds[k], 0, len);
            }
            RegisteredColumnBuffers cb;
            cb.kind = distinct.kind;
            cb.count = n;
            cb.message = &bufs[0];
            cb.key = &bufs[1];
            cb.signature = &bufs[2];
            split = measure(n, repeat, want, results,
                            [&] { return client->verify_registered_columns(cb, results.data()); });
            for (int k = 0; k < 3; ++k) {
                bufs[k].reset();
                close(fds[k]);
            }
        }
        std::printf("%10zu  %12.0f %10.2f %9.0f ns  %12.0f %10.2f %9.0f ns  %s", n, copy.rows_per_s,
                    copy.bytes_per_row, copy.client_cpu_ns_per_row, reg.rows_per_s, reg.bytes_per_row,
                    reg.client_cpu_ns_per_row,
                    copy.verdicts_ok && reg.verdicts_ok && split.verdicts_ok ? "identical" : "DIFFER");
        if (per_column)
            std::printf("  per-column %.0f rows/s %.2f B/row %.0f ns", split.rows_per_s, split.bytes_per_row,
                        split.client_cpu_ns_per_row);
        std::printf("\n");
        buf.reset();
        munmap(map, bytes);
        close(fd);
        if (!copy.verdicts_ok || !reg.verdicts_ok || !split.verdicts_ok) return 1;
    }
    return 0;
}
