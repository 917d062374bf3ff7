// SPDX-License-Identifier: MIT
#include "daemon/backends/lanes_rows.hpp"

#include <algorithm>

#include "kernels/kernel_math.hpp"

namespace sigverify::daemon {
namespace {

namespace lanes = kernels::lanes;

constexpr std::uint8_t kLaneValid = 1;

// The lanes' verdicts (0 invalid, 1 valid, 2 recheck) of eight records of
// one kind. THE ONE PLACE that says which rows the lanes verify.
void verify_group8(lanes::Width w, const wire::RowSpan& rows, const std::uint8_t* const records[8],
                   std::uint8_t out[8]) {
    if (rows.kind == wire::RecordKind::ecdsa)
        lanes::ecdsa_verify8(w, records, rows.encoding == wire::SigEncoding::compact, out);
    else
        lanes::schnorr_verify8(w, records, out);
}

}  // namespace

LanesCounts verify_lanes_range(lanes::Width w, const wire::RowSpan& rows, std::size_t begin, std::size_t end,
                               std::uint8_t* verdicts) {
    LanesCounts c;
    end = std::min(end, rows.count);
    for (std::size_t b = begin; b < end; b += 8) {
        const std::size_t n = std::min<std::size_t>(8, end - b);
        // A short last group repeats its last row in the spare lanes (their
        // verdicts are not used).
        const std::uint8_t* records[8];
        for (std::size_t l = 0; l < 8; ++l) records[l] = rows.row(b + std::min(l, n - 1));
        std::uint8_t out[8];
        verify_group8(w, rows, records, out);
        for (std::size_t l = 0; l < n; ++l) {
            bool ok = out[l] == kLaneValid;
            if (out[l] > kLaneValid) {  // a recheck (or any other value): the exact path decides
                ++c.rechecks;
                ok = kernels::verify_record_exact(records[l], rows.kind, rows.encoding);
            }
            verdicts[b + l] = ok ? 1 : 0;
            ++(ok ? c.valid : c.invalid);
        }
    }
    return c;
}

}  // namespace sigverify::daemon
