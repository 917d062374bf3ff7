// SPDX-License-Identifier: MIT
// sigverify_info_flood_bench: what sessions that flood the daemon with info
// requests cost an honest client (BENCHMARKS.md "## New measurements").
// Not a test: it prints figures.
//
//   sigverify_info_flood_bench [--window-ms 4000] [--flooders 3] [--rounds 2]
//                              [--batch-rows 256] [--daemon PATH] [-- SIGVERIFYD-ARGS...]
//
// One CPU daemon (--backend cpu --cpu-threads 1 unless SIGVERIFYD-ARGS say
// otherwise), an honest client in this process, and --flooders processes,
// each a raw session asking for info in a loop as fast as it is answered.
// Each round measures the honest client alone, then beside the flooders:
// 1-row batches for the window (p50, p99), then --batch-rows batches for the
// window (rows/s); every verdict is checked against the known ones. Also
// printed: this process's CPU seconds, the daemon's, and the flooders'
// answered and refused requests per second. --daemon: another build of the
// daemon (an earlier commit's, to compare) in place of the one built here.
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "client/cli/daemon_process.hpp"
#include "latency_load.hpp"
#include "raw_session.hpp"
#include "shm_protocol/info_message.hpp"
#include "sigverify/client.hpp"
#include "support/proc_probes.hpp"

using namespace sigverify;
using namespace sigverify::test;
using Clock = std::chrono::steady_clock;

namespace {

int usage() {
    std::fprintf(stderr,
                 "usage: sigverify_info_flood_bench [--window-ms MS] [--flooders N] [--rounds N] [--batch-rows N] "
                 "[--daemon PATH] [-- SIGVERIFYD-ARGS...]\n");
    return 2;
}

double self_cpu_seconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

struct Flooders {
    std::vector<pid_t> pids;
    std::vector<int> results;  // read ends: each child writes {answered, refused}
    int stop_write = -1;       // closed to stop them
};

// Starts n flooding processes on the daemon at socket; each asks until stop.
Flooders start_flooders(const std::string& socket, unsigned n) {
    Flooders f;
    int stop[2];
    if (pipe(stop) != 0) std::exit(3);
    for (unsigned i = 0; i < n; ++i) {
        int out[2];
        if (pipe(out) != 0) std::exit(3);
        const pid_t pid = fork();
        if (pid == 0) {
            close(stop[1]);
            close(out[0]);
            RawSession s;
            std::uint64_t counts[2] = {0, 0};
            if (s.handshake(socket, shm::kProtocolVersion, "flooder")) {
                const shm::InfoRequest req{shm::kInfoMagic, 0};
                for (;;) {
                    pollfd p{stop[0], POLLIN, 0};
                    if (::poll(&p, 1, 0) != 0) break;
                    if (!shm::send_packet(s.sock, &req, sizeof req)) break;
                    shm::ring_force(s.h->daemon_bell);
                    shm::InfoReply reply{};
                    if (::recv(s.sock, &reply, sizeof reply, 0) != ssize_t(sizeof reply)) continue;
                    ++counts[reply.status == std::uint32_t(Status::ok) ? 0 : 1];
                }
            }
            (void)!write(out[1], counts, sizeof counts);
            _exit(0);
        }
        close(out[1]);
        f.pids.push_back(pid);
        f.results.push_back(out[0]);
    }
    close(stop[0]);
    f.stop_write = stop[1];
    return f;
}

// Stops them; {answered, refused} over all of them.
std::pair<std::uint64_t, std::uint64_t> stop_flooders(Flooders& f) {
    close(f.stop_write);
    std::uint64_t answered = 0, refused = 0;
    for (std::size_t i = 0; i < f.pids.size(); ++i) {
        std::uint64_t counts[2] = {0, 0};
        if (read(f.results[i], counts, sizeof counts) == ssize_t(sizeof counts)) {
            answered += counts[0];
            refused += counts[1];
        }
        close(f.results[i]);
        waitpid(f.pids[i], nullptr, 0);
    }
    return {answered, refused};
}

struct Figures {
    std::vector<double> one_row_ms;
    double rows_per_second = 0;
    double self_cpu_s = 0, daemon_cpu_s = 0;
    bool wrong = false;
};

Figures measure(Client& c, pid_t daemon, std::chrono::milliseconds window, std::size_t batch_rows) {
    Figures f;
    const KnownRows one = make_known_rows(wire::Table::ecdsa, 1, wire::SigEncoding::opaque, 5);
    KnownRows many = make_known_rows(wire::Table::ecdsa, batch_rows, wire::SigEncoding::opaque, 6);
    std::vector<std::uint8_t> got(batch_rows);
    const double self0 = self_cpu_seconds(), daemon0 = cpu_seconds(daemon);
    std::vector<std::uint8_t> row = one.rows;
    for (auto end = Clock::now() + window; Clock::now() < end;) {
        const auto t0 = Clock::now();
        const BatchResult r = c.verify_ecdsa(row.data(), 1, one.tail, got.data());
        f.one_row_ms.push_back(latency::ms_since(t0));
        f.wrong |= !r.ok() || got[0] != one.expected[0];
    }
    std::uint64_t rows = 0;
    const auto t0 = Clock::now();
    for (auto end = t0 + window; Clock::now() < end;) {
        const BatchResult r = c.verify_ecdsa(many.rows.data(), batch_rows, many.tail, got.data());
        f.wrong |= !r.ok() || !std::equal(got.begin(), got.end(), many.expected.begin());
        rows += batch_rows;
    }
    f.rows_per_second = double(rows) / (latency::ms_since(t0) / 1000);
    f.self_cpu_s = self_cpu_seconds() - self0;
    f.daemon_cpu_s = cpu_seconds(daemon) - daemon0;
    return f;
}

void print(const char* what, const Figures& f, std::size_t batch_rows) {
    std::printf("  %-16s 1-row n=%-6zu p50 %7.3f  p99 %7.3f ms | %zu-row batches %9.0f rows/s | CPU s: client %.2f, "
                "daemon %.2f%s\n",
                what, f.one_row_ms.size(), latency::percentile(f.one_row_ms, 0.5),
                latency::percentile(f.one_row_ms, 0.99), batch_rows, f.rows_per_second, f.self_cpu_s,
                f.daemon_cpu_s, f.wrong ? "  WRONG VERDICTS" : "");
}

}  // namespace

int main(int argc, char** argv) {
    auto window = std::chrono::milliseconds(4000);
    unsigned flooders = 3, rounds = 2;
    std::size_t batch_rows = 256;
    std::string daemon_bin = SIGVERIFYD_BIN;
    std::vector<std::string> daemon_args;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool has = i + 1 < argc;
        if (a == "--window-ms" && has) window = std::chrono::milliseconds(std::atol(argv[++i]));
        else if (a == "--flooders" && has) flooders = unsigned(std::atoi(argv[++i]));
        else if (a == "--rounds" && has) rounds = unsigned(std::atoi(argv[++i]));
        else if (a == "--batch-rows" && has) batch_rows = std::strtoull(argv[++i], nullptr, 10);
        else if (a == "--daemon" && has) daemon_bin = argv[++i];
        else if (a == "--") {
            for (++i; i < argc; ++i) daemon_args.push_back(argv[i]);
        } else return usage();
    }
    if (batch_rows == 0) return usage();
    if (daemon_args.empty()) daemon_args = {"--backend", "cpu", "--cpu-threads", "1"};
    cli::DaemonProcessOptions o;
    o.binary = daemon_bin;
    o.args = daemon_args;
    o.temp_template = "/tmp/sigverifyd-bench-XXXXXX";
    cli::DaemonProcess d(o);
    std::printf("daemon: %s", o.binary.c_str());
    for (const auto& a : o.args) std::printf(" %s", a.c_str());
    std::printf("\nhonest client: 1-row batches then %zu-row batches, %lld ms each; %u flooding sessions\n", batch_rows,
                static_cast<long long>(window.count()), flooders);
    ClientOptions co;
    co.runtime_dir = d.dir();
    co.name = "honest";
    auto c = Client::connect(co);
    (void)measure(*c, d.pid(), std::chrono::milliseconds(500), batch_rows);  // warm up
    bool wrong = false;
    for (unsigned r = 0; r < rounds; ++r) {
        std::printf("round %u:\n", r + 1);
        const Figures alone = measure(*c, d.pid(), window, batch_rows);
        print("alone", alone, batch_rows);
        Flooders f = start_flooders(d.socket_path(), flooders);
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        const auto t0 = Clock::now();
        const Figures flooded = measure(*c, d.pid(), window, batch_rows);
        const auto [answered, refused] = stop_flooders(f);
        const double s = latency::ms_since(t0) / 1000;
        print("beside flooders", flooded, batch_rows);
        std::printf("  flooders: %.0f answered/s, %.0f refused/s; honest throughput %+.1f%%, p99 %+.3f ms\n",
                    double(answered) / s, double(refused) / s,
                    100 * (flooded.rows_per_second / alone.rows_per_second - 1),
                    latency::percentile(flooded.one_row_ms, 0.99) - latency::percentile(alone.one_row_ms, 0.99));
        wrong |= alone.wrong || flooded.wrong;
    }
    return wrong ? 1 : 0;
}
