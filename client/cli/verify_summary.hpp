// SPDX-License-Identifier: MIT
// The summary of one `sigverify verify` run, printed as the familiar text line
// or, with --json, as one JSON object with the same facts (json_output.hpp).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sigverify::cli {

// --baseline: plain single-threaded libsecp256k1 calls on the same rows.
struct BaselineSummary {
    std::uint64_t rows = 0;
    std::uint64_t valid = 0;
    double seconds = 0;
};

struct VerifySummary {
    bool collect = false;
    bool daemon = false;   // through sigverifyd (else --local)
    bool columns = false;  // a column directory (else a row file)
    unsigned threads = 0;  // --local: verifier threads
    std::uint64_t epoch = 0;  // daemon: the daemon's epoch
    std::uint64_t valid = 0;
    std::uint64_t invalid = 0;
    double seconds = 0;
    std::optional<BaselineSummary> baseline;
};

// "verify (daemon, epoch E): rows=N valid=V invalid=I seconds=S rows/s=R"
// or "collect (local, columns, 4 threads): ...", and the baseline line if any.
std::string summary_text(const VerifySummary& s);

// {"command": "verify"|"collect", "status", "where": "local"|"daemon",
// "input": "rows"|"columns", "threads" (local) or "epoch" (daemon, hex
// string), "rows", "valid", "invalid", "seconds", "rows_per_second", and with
// --baseline a "baseline" object}. status: "ok", or "invalid_rows" when
// --strict fails the run (exit code 1).
nlohmann::ordered_json summary_json(const VerifySummary& s, std::string_view status);

}  // namespace sigverify::cli
