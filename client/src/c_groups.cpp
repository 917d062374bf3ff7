// SPDX-License-Identifier: MIT
// C ABI of the group and block verdicts (sigverify.h), over sigverify/groups.hpp.
#include <cstring>
#include <exception>
#include <span>
#include <vector>

#include "sigverify/groups.hpp"
#include "sigverify/sigverify.h"

namespace {

sigverify_group_row to_c(const sigverify::GroupRow& r) {
    sigverify_group_row c;
    std::memset(&c, 0, sizeof c);
    c.mn = r.mn;
    c.group = r.group;
    c.block_fk = r.block_fk;
    return c;
}

void copy_out(const std::vector<sigverify::GroupRow>& rows, sigverify_group_row* out) {
    for (std::size_t i = 0; i < rows.size(); ++i) out[i] = to_c(rows[i]);
}

}  // namespace

extern "C" {

int sigverify_single_signature_group_rows(const uint32_t* block_fks, size_t n, sigverify_group_row* out) {
    if (n != 0 && (block_fks == nullptr || out == nullptr)) return SIGVERIFY_E_INVALID_ARGUMENT;
    try {
        copy_out(sigverify::single_signature_group_rows(std::span<const std::uint32_t>(block_fks, n)), out);
        return SIGVERIFY_OK;
    } catch (const std::exception&) {  // more than 65536 singles in a block, or out of memory
        return SIGVERIFY_E_INVALID_ARGUMENT;
    }
}

int sigverify_group_rows_from_ecdsa_correlate(const uint8_t* correlate, size_t n, sigverify_group_row* out) {
    if (n != 0 && (correlate == nullptr || out == nullptr)) return SIGVERIFY_E_INVALID_ARGUMENT;
    try {
        copy_out(sigverify::group_rows_from_ecdsa_correlate(std::span<const std::uint8_t>(correlate, n * 6)), out);
        return SIGVERIFY_OK;
    } catch (const std::exception&) {
        return SIGVERIFY_E_INVALID_ARGUMENT;
    }
}

int sigverify_block_verdicts(int kind, const sigverify_group_row* rows, const uint8_t* verdicts, size_t n,
                             sigverify_block_verdict* blocks, size_t capacity, size_t* block_count,
                             uint64_t* failed_blocks) {
    if ((kind != SIGVERIFY_GROUP_MULTISIG && kind != SIGVERIFY_GROUP_THRESHOLD) || block_count == nullptr ||
        (n != 0 && (rows == nullptr || verdicts == nullptr)) || (capacity != 0 && blocks == nullptr))
        return SIGVERIFY_E_INVALID_ARGUMENT;
    try {
        std::vector<sigverify::GroupRow> in(n);
        for (std::size_t i = 0; i < n; ++i) in[i] = {rows[i].mn, rows[i].group, rows[i].block_fk};
        const sigverify::GroupReport r = sigverify::compute_group_verdicts(
            kind == SIGVERIFY_GROUP_THRESHOLD ? sigverify::GroupKind::threshold : sigverify::GroupKind::multisig, in,
            std::span<const std::uint8_t>(verdicts, n));
        *block_count = r.blocks.size();
        if (failed_blocks != nullptr) *failed_blocks = r.failed_blocks;
        if (r.blocks.size() > capacity) return SIGVERIFY_E_TOO_LARGE;
        for (std::size_t i = 0; i < r.blocks.size(); ++i)
            blocks[i] = {r.blocks[i].block_fk, r.blocks[i].groups, r.blocks[i].failed_groups, r.blocks[i].pass ? 1 : 0};
        return SIGVERIFY_OK;
    } catch (const std::exception&) {
        return SIGVERIFY_E_SYSTEM;  // out of memory
    }
}

}  // extern "C"
