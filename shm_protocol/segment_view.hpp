// SPDX-License-Identifier: MIT
// A mapped segment as the client, the daemon and the fuzz harness address it:
// the mapping, its header, the two rings and the arena, laid out as
// segment_access.hpp computes (compute_layout) and checks (check_header).
// One definition, so the three agree on what a view holds and how it is
// derived. Not installed: no public header names a mapping.
//
// Invariant: every pointer lies inside [base, base + size) and stays valid
// while the mapping does; a default view (base == nullptr) maps nothing.
#pragma once

#include <cstddef>
#include <cstdint>

#include "sigverify/shm_protocol/segment_layout.hpp"

namespace sigverify::shm {

struct SegmentView {
    std::uint8_t* base = nullptr;  // the mapping
    std::size_t size = 0;          // its bytes
    SegmentHeader* header = nullptr;
    SubmissionEntry* sqes = nullptr;
    CompletionEntry* cqes = nullptr;
    std::uint8_t* arena = nullptr;
    std::uint64_t arena_size = 0;
    std::uint32_t sq_entries = 0, cq_entries = 0;
};

// The view of the mapping [base, base + size) laid out as `l` says: a Layout
// the caller computed, or its own checked copy of the header (the same field
// names). Only after compute_layout succeeded or check_header(copy, size)
// passed: the offsets are then inside the mapping.
template <class LayoutOrHeader>
SegmentView view_segment(void* base, std::size_t size, const LayoutOrHeader& l) {
    auto* bytes = static_cast<std::uint8_t*>(base);
    SegmentView v;
    v.base = bytes;
    v.size = size;
    v.header = reinterpret_cast<SegmentHeader*>(bytes);
    v.sqes = reinterpret_cast<SubmissionEntry*>(bytes + l.sq_entries_offset);
    v.cqes = reinterpret_cast<CompletionEntry*>(bytes + l.cq_entries_offset);
    v.arena = bytes + l.arena_offset;
    v.arena_size = l.arena_size;
    v.sq_entries = l.sq_entries;
    v.cq_entries = l.cq_entries;
    return v;
}

}  // namespace sigverify::shm
