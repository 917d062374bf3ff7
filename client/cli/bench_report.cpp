// SPDX-License-Identifier: MIT
#include "client/cli/bench_report.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>
#include <utility>

#include "client/cli/cli_common.hpp"

namespace sigverify::cli::bench {

using nlohmann::json;

double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const std::size_t i = std::min(v.size() - 1, std::size_t(std::ceil(p / 100.0 * double(v.size()))) - (p > 0 ? 1 : 0));
    return v[i];
}

std::string human_rate(double r) {
    char buf[32];
    if (r >= 1e6) std::snprintf(buf, sizeof buf, "%.2fM", r / 1e6);
    else if (r >= 1e3) std::snprintf(buf, sizeof buf, "%.1fk", r / 1e3);
    else std::snprintf(buf, sizeof buf, "%.0f", r);
    return buf;
}

void write_svg(const std::string& path, const std::vector<Row>& rows) {
    // rows/s against batch size, log-log, one line per (table, backend).
    std::map<std::string, std::vector<std::pair<double, double>>> series;
    double xmin = 1e300, xmax = 0, ymin = 1e300, ymax = 0;
    for (const auto& r : rows) {
        series[r.table + " / " + r.backend].emplace_back(double(r.batch), r.rows_per_s());
        xmin = std::min(xmin, double(r.batch));
        xmax = std::max(xmax, double(r.batch));
        ymin = std::min(ymin, r.rows_per_s());
        ymax = std::max(ymax, r.rows_per_s());
    }
    if (series.empty()) return;
    const double W = 900, H = 560, L = 80, R = 300, T = 40, B = 60;
    const double lx0 = std::log10(std::max(1.0, xmin)), lx1 = std::log10(std::max(xmax, xmin * 10));
    const double ly0 = std::floor(std::log10(std::max(1.0, ymin))), ly1 = std::ceil(std::log10(std::max(ymax, ymin * 10)));
    auto X = [&](double x) { return L + (std::log10(x) - lx0) / (lx1 - lx0) * (W - L - R); };
    auto Y = [&](double y) { return H - B - (std::log10(y) - ly0) / (ly1 - ly0) * (H - T - B); };
    std::ofstream out(path);
    if (!out) throw InputError(path + ": cannot create the plot");
    out << "<svg xmlns='http://www.w3.org/2000/svg' width='" << W << "' height='" << H
        << "' font-family='sans-serif' font-size='12'>\n<rect width='100%' height='100%' fill='white'/>\n";
    out << "<text x='" << L << "' y='24' font-size='16'>sigverify bench: rows/s by batch size (log-log)</text>\n";
    for (double e = ly0; e <= ly1; e += 1) {
        out << "<line x1='" << L << "' x2='" << W - R << "' y1='" << Y(std::pow(10, e)) << "' y2='" << Y(std::pow(10, e))
            << "' stroke='#ddd'/><text x='" << L - 8 << "' y='" << Y(std::pow(10, e)) + 4 << "' text-anchor='end'>"
            << human_rate(std::pow(10, e)) << "</text>\n";
    }
    std::vector<double> xs;
    for (const auto& r : rows) xs.push_back(double(r.batch));
    std::sort(xs.begin(), xs.end());
    xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
    for (double x : xs)
        out << "<line x1='" << X(x) << "' x2='" << X(x) << "' y1='" << T << "' y2='" << H - B << "' stroke='#eee'/><text x='"
            << X(x) << "' y='" << H - B + 18 << "' text-anchor='middle'>" << std::size_t(x) << "</text>\n";
    out << "<text x='" << (L + W - R) / 2 << "' y='" << H - 16 << "' text-anchor='middle'>rows per batch</text>\n";
    static const char* colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"};
    static const char* dashes[] = {"", "6,3", "2,3", "8,3,2,3"};
    std::map<std::string, int> backend_color, table_dash;
    int i = 0;
    for (const auto& [name, points] : series) {
        const auto slash = name.find(" / ");
        const std::string table = name.substr(0, slash), backend = name.substr(slash + 3);
        if (!backend_color.count(backend)) backend_color[backend] = int(backend_color.size()) % 8;
        if (!table_dash.count(table)) table_dash[table] = int(table_dash.size()) % 4;
        std::string d;
        for (const auto& [x, y] : points) d += (d.empty() ? "M" : " L") + std::to_string(X(x)) + "," + std::to_string(Y(y));
        const char* color = colors[backend_color[backend]];
        out << "<path d='" << d << "' fill='none' stroke='" << color << "' stroke-width='2' stroke-dasharray='"
            << dashes[table_dash[table]] << "'/>\n";
        for (const auto& [x, y] : points) out << "<circle cx='" << X(x) << "' cy='" << Y(y) << "' r='3' fill='" << color << "'/>\n";
        const double ly = T + 10 + 18 * i++;
        out << "<line x1='" << W - R + 20 << "' x2='" << W - R + 50 << "' y1='" << ly << "' y2='" << ly << "' stroke='" << color
            << "' stroke-width='2' stroke-dasharray='" << dashes[table_dash[table]] << "'/><text x='" << W - R + 56
            << "' y='" << ly + 4 << "'>" << name << "</text>\n";
    }
    out << "</svg>\n";
}

std::string cpu_model() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
    return "unknown";
}

namespace {

void print_throughput(const std::vector<Row>& rows, unsigned all_threads) {
    std::printf("%-10s %9s  %-20s %10s %10s %10s %11s %9s %9s %9s\n", "table", "batch", "verifier", "best ms", "median ms",
                "max ms", "rows/s", "ns/row", "vs x1", ("vs x" + std::to_string(all_threads)).c_str());
    for (const Row& r : rows) {
        // Baselines of this (table, batch) are the rows before it in the same group.
        const Row* base1 = nullptr;
        const Row* baseN = nullptr;
        for (const Row& b : rows)
            if (b.table == r.table && b.batch == r.batch) {
                if (b.backend == "libsecp256k1 x1") base1 = &b;
                else if (b.backend.rfind("libsecp256k1 x", 0) == 0) baseN = &b;
            }
        // A baseline that was not measured (--skip-single-thread) prints "-", never a ratio of 0.
        auto ratio = [&](const Row* base) {
            char buf[32];
            if (base) std::snprintf(buf, sizeof buf, "%8.2fx", base->timing.min() / r.timing.min());
            else std::snprintf(buf, sizeof buf, "%9s", "-");
            return std::string(buf);
        };
        std::printf("%-10s %9zu  %-20s %10.3f %10.3f %10.3f %11s %9.0f %s %s\n", r.table.c_str(), r.batch,
                    r.backend.c_str(), r.timing.min() * 1e3, r.timing.median() * 1e3, r.timing.max() * 1e3,
                    human_rate(r.rows_per_s()).c_str(), r.ns_per_row(), ratio(base1).c_str(), ratio(baseN).c_str());
    }
}

void print_clients(const BenchResults& b) {
    if (!b.multi.empty()) {
        double total_rows = 0, secs = 0, lo = 1e300, hi = 0, sum = 0, sum2 = 0;
        for (const auto& f : b.multi) {
            const double rate = f.rows / f.seconds;
            total_rows += f.rows;
            secs = std::max(secs, f.seconds);
            lo = std::min(lo, rate);
            hi = std::max(hi, rate);
            sum += rate;
            sum2 += rate * rate;
        }
        std::printf("\nmulti-client: %zu processes, %zu-row ecdsa batches, %.1f s: total %s rows/s; per client min %s, max %s, "
                    "Jain fairness %.3f\n",
                    b.multi.size(), b.multi_batch, secs, human_rate(total_rows / secs).c_str(), human_rate(lo).c_str(),
                    human_rate(hi).c_str(), sum * sum / (double(b.multi.size()) * sum2));
        for (std::size_t i = 0; i < b.multi.size(); ++i)
            std::printf("  client %zu: %s rows/s, batch round trip p50 %.0f us, p99 %.0f us\n", i,
                        human_rate(b.multi[i].rows / b.multi[i].seconds).c_str(), b.multi[i].p50_us, b.multi[i].p99_us);
    }
    if (!b.noisy.empty()) {
        double bulk = 0;
        for (std::size_t i = 1; i < b.noisy.size(); ++i) bulk += b.noisy[i].rows / b.noisy[i].seconds;
        std::printf("\nquiet client beside %zu noisy clients (%zu-row ecdsa batches): quiet 1-row batch p50 %.0f us, "
                    "p99 %.0f us; noisy total %s rows/s\n",
                    b.noisy.size() - 1, b.multi_batch, b.noisy[0].p50_us, b.noisy[0].p99_us, human_rate(bulk).c_str());
    }
}

}  // namespace

void print_results(const BenchResults& b, unsigned all_threads, bool daemon) {
    print_throughput(b.rows, all_threads);
    std::printf("\nround-trip latency (ecdsa rows; in-process figures are verification time only)\n");
    std::printf("%-6s %-20s %8s %10s %10s %10s %10s\n", "batch", "verifier", "runs", "p50 us", "p99 us", "p99.9 us", "max us");
    for (const auto& l : b.latencies)
        std::printf("%-6zu %-20s %8zu %10.1f %10.1f %10.1f %10.1f\n", l.batch, l.backend.c_str(), l.us.size(),
                    percentile(l.us, 50), percentile(l.us, 99), percentile(l.us, 99.9), percentile(l.us, 100));
    print_clients(b);
    std::printf("\nper operation (client side, %zu-row batches)\n%-16s %-20s %10s %12s %12s\n", b.per_op_batch, "operation",
                "verifier", "ns/op", "bytes/op", "allocs/op");
    for (const auto& p : b.per_op)
        std::printf("%-16s %-20s %10.0f %12.0f %12.4f\n", p.op.c_str(), p.backend.c_str(), p.ns, p.bytes, p.allocs);
    if (daemon) std::printf("\ndaemon verdicts that differed from libsecp256k1: %zu batches\n", b.wrong);
}

void write_json(const std::string& path, const std::string& preset, const BenchResults& b) {
    json j;
    j["preset"] = preset;
    j["cpu"] = cpu_model();
    j["hardware_threads"] = std::thread::hardware_concurrency();
    j["wrong_batches"] = b.wrong;
    for (const auto& r : b.rows)
        j["throughput"].push_back({{"table", r.table}, {"batch", r.batch}, {"verifier", r.backend},
                                   {"seconds", r.timing.seconds}, {"best_s", r.timing.min()},
                                   {"median_s", r.timing.median()}, {"max_s", r.timing.max()},
                                   {"rows_per_s", r.rows_per_s()}, {"ns_per_row", r.ns_per_row()}});
    for (const auto& l : b.latencies)
        j["latency"].push_back({{"batch", l.batch}, {"verifier", l.backend}, {"runs", l.us.size()},
                                {"p50_us", percentile(l.us, 50)}, {"p99_us", percentile(l.us, 99)},
                                {"p999_us", percentile(l.us, 99.9)}, {"max_us", percentile(l.us, 100)}});
    for (const auto& f : b.multi)
        j["multi_client"].push_back({{"rows", f.rows}, {"seconds", f.seconds}, {"rows_per_s", f.rows / f.seconds},
                                     {"p50_us", f.p50_us}, {"p99_us", f.p99_us}});
    for (std::size_t i = 0; i < b.noisy.size(); ++i)
        j["noisy"].push_back({{"role", i == 0 ? "quiet" : "noisy"}, {"batch", i == 0 ? std::size_t(1) : b.multi_batch},
                              {"rows_per_s", b.noisy[i].rows / b.noisy[i].seconds}, {"p50_us", b.noisy[i].p50_us},
                              {"p99_us", b.noisy[i].p99_us}});
    for (const auto& p : b.per_op)
        j["per_op"].push_back({{"op", p.op}, {"verifier", p.backend}, {"ns", p.ns}, {"bytes", p.bytes}, {"allocs", p.allocs}});
    std::ofstream out(path);
    if (!out) throw InputError(path + ": cannot create");
    out << j.dump(2) << "\n";
    std::printf("json: %s\n", path.c_str());
}

}  // namespace sigverify::cli::bench
