// SPDX-License-Identifier: MIT
#include "client/cli/bench_report.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <utility>

#include "client/cli/cli_common.hpp"

namespace sigverify::cli::bench {

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

}  // namespace sigverify::cli::bench
