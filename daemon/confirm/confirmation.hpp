// SPDX-License-Identifier: MIT
// The confirmation rule: which verdicts of an untrusted (GPU) backend
// libsecp256k1 must confirm before a client sees them.
//
// What consensus needs is right BLOCK verdicts: a false INVALID must never
// fail a valid block, a false VALID must never pass an invalid one.
//
//   strict  every INVALID verdict is confirmed (and 1 in N VALID ones are
//           sampled). Always used for ecdsa, schnorr and threshold tables:
//           there one failing row fails its block (BIP-342 for threshold
//           rows: a non-empty signature that fails stops the script), so
//           every INVALID row decides something.
//   groups  multisig tables only. A multisig row is one CHECKMULTISIG attempt
//           (signature s against key k); an INVALID attempt decides nothing
//           unless its group fails. So the INVALID rows of every group that
//           FAILS under the backend's verdicts are confirmed, and of the
//           groups that pass only a sample (1 in invalid_sample_every).
//
// Why groups is safe. The group rule (reference/group_verdicts.hpp) is
// monotone: turning an INVALID verdict into VALID only adds usable
// (signature, key) pairs, and the in-order matching of CHECKMULTISIG can only
// gain from more usable pairs. So a group that passes with some verdicts
// falsely INVALID also passes with the true ones: leaving them unconfirmed
// cannot change its verdict. A group that fails has all its INVALID rows
// confirmed, so its verdict is the true one. False VALIDs are what the VALID
// sample is for, as under strict. Any disagreement switches the backend off.
//
// A group must be judged whole. A chunk sees only its rows, so each job keeps
// a GroupLedger of the groups its chunks met: a group met by a second chunk is
// SPANNING; from then on every chunk confirms its INVALID rows, and the rows
// of the first chunk that met it are re-verified when the job ends, before
// its completion is posted (GroupLedger::take_repairs): one pass over each
// such chunk, so the repair is linear in the job's rows however many groups
// span (a pass per group would be quadratic). Only the rows whose
// verdict is INVALID are re-verified: a VALID verdict of a group that
// spans is trusted as any other (the VALID sample). Rows still being
// written (block_fk FF FF FF) belong to no group: their INVALIDs are
// confirmed. Tables that are not canonical multisig (another tail, no table
// label, a threshold or single-signature table) use strict.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "reference/columns.hpp"
#include "sigverify/shm_protocol/wire_format.hpp"

namespace sigverify::daemon {

enum class ConfirmRule : std::uint8_t { strict = 0, groups = 1 };
std::string_view to_string(ConfirmRule rule);

// A row's group: (block_fk << 16) | group. kNoGroup: the row is still being
// written (block_fk FF FF FF) and belongs to no group.
using GroupKey = std::uint64_t;
inline constexpr GroupKey kNoGroup = ~GroupKey(0);

// The grouping fields of a staged chunk, read when the chunk is staged (so
// they are private like its records): row i of the chunk has key[i], mn[i].
// spanning[i] = 1 marks the rows whose group other chunks also hold.
struct ChunkGroups {
    std::vector<GroupKey> key;
    std::vector<std::uint8_t> mn;
    std::vector<std::uint8_t> spanning;
    std::size_t count = 0;

    // Rows [begin, end) of canonical multisig rows (tail mn || group || block_fk).
    bool stage_rows(const wire::RowSpan& rows, std::size_t begin, std::size_t end) noexcept;
    // Rows [begin, end) of ECDSA columns with the libbitcoin correlate (id || pair || group).
    bool stage_columns(const wire::ColumnSpan& columns, std::size_t begin, std::size_t end) noexcept;
};

// Whether a job's table can use the groups rule: a multisig-labelled table of
// canonical rows, or ECDSA columns with the 6-byte libbitcoin correlate.
bool groups_rule_applies(std::uint8_t table, bool is_columns, const wire::RowSpan& rows,
                         const wire::ColumnSpan& columns);

// The group key of row i of a job, read from client memory (tail or correlate).
GroupKey read_group_key(bool is_columns, const wire::RowSpan& rows, const wire::ColumnSpan& columns,
                        std::size_t i);

// Marks need[i] = 1 for every INVALID row i (verdicts[i] != 1) whose group
// fails under `verdicts`, is spanning, or which has no group; need[i] = 0 for
// all others. Returns the number of rows marked. `order` is scratch space.
std::size_t mark_rows_to_confirm(const ChunkGroups& groups, const std::uint8_t* verdicts, std::uint8_t* need,
                                 std::vector<std::pair<GroupKey, std::uint32_t>>& order);

// The groups a job's chunks have met (one per job under the groups rule).
class GroupLedger {
public:
    // A chunk's rows [begin, end) of the job.
    struct Range {
        std::size_t begin = 0, end = 0;
    };
    struct Seen {
        Range first;  // the first chunk that met the group
        bool spanning = false;
    };

    // What the job-end repair re-verifies: the rows, in each first chunk of
    // a group that became spanning, of the groups whose first chunk it is.
    // Each such chunk is listed once (ascending), so the repair reads every
    // row of the job at most once, whatever the number of groups.
    class Repairs {
    public:
        const std::vector<Range>& ranges() const { return ranges_; }
        // Whether a row of ranges()[r] with group `key` is to be re-verified.
        bool wanted(GroupKey key, const Range& range) const {
            const auto it = seen_.find(key);
            return it != seen_.end() && it->second.spanning && it->second.first.begin == range.begin;
        }

    private:
        friend class GroupLedger;
        std::unordered_map<GroupKey, Seen> seen_;
        std::vector<Range> ranges_;
    };

    // Registers the groups of chunk [begin, end) and sets groups.spanning:
    // 1 for the rows of every group another chunk has registered. The first
    // chunk of a group that becomes spanning is to be repaired.
    void register_chunk(std::size_t begin, std::size_t end, ChunkGroups& groups);
    // Once, when the job's chunks are all done; empties the ledger.
    Repairs take_repairs();

private:
    std::mutex mutex_;
    std::unordered_map<GroupKey, Seen> seen_;
    std::vector<Range> repair_ranges_;  // first chunks of spanning groups (repeats removed by take_repairs)
};

}  // namespace sigverify::daemon
