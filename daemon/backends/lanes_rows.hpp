// SPDX-License-Identifier: MIT
// Packed rows through the CPU lanes (kernels/lanes/lanes.hpp), eight at a
// time, every verdict a final one: a lane's "recheck" (2) is decided by the
// exact path (kernels::verify_record_exact, the rule resolve_verdict32
// applies to the GPU's rechecks) before it is written. The rows may be the
// client's own (read in place, tails and all): each row is read where it
// lies, nothing is written but verdicts[].
//
// Which rows the lanes run is decided in one place (lanes_rows.cpp,
// verify_group8): ECDSA and BIP-340 rows, both in the lanes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/lanes/lanes.hpp"
#include "sigverify/shm_protocol/wire_format.hpp"

namespace sigverify::daemon {

struct LanesCounts {
    std::uint64_t valid = 0;
    std::uint64_t invalid = 0;
    std::uint64_t rechecks = 0;  // lane verdicts 2, decided by the exact path
};

// verdicts[i] (1 valid, 0 invalid) for rows [begin, end) of rows, indexing
// the whole span, at lane width w (scalar: the exact path, anywhere).
LanesCounts verify_lanes_range(kernels::lanes::Width w, const wire::RowSpan& rows, std::size_t begin,
                               std::size_t end, std::uint8_t* verdicts);

}  // namespace sigverify::daemon
