// SPDX-License-Identifier: MIT
// The ring steps, written once for the client, the daemon and the fuzz
// harness: a producer writes entries at its tail and publishes the tail, a
// consumer copies entries out at its head and releases the head. Each ring
// has one producer and one consumer (the client produces submissions and
// consumes completions; the daemon the reverse), and each side owns exactly
// one index of each ring.
//
// Memory order, and why:
//   * the owner keeps its index privately and is the only writer of its
//     shared word: it publishes with a release store, after the entry bytes
//     (producer) or after copying the entries out (consumer), so the peer's
//     acquire load that sees the new index also sees those bytes written, or
//     knows the slots may be written again;
//   * the peer's index is hostile input (the other process may be buggy or
//     malicious): every read of it is an acquire load followed by
//     ring_count_ok (segment_access.hpp) before it is used; out of range, the
//     caller ends the connection. Entries are copied out before they are
//     checked, since the producer may rewrite a slot at any time.
// Doorbells are separate (doorbell.hpp): a side rings after publishing.
// Not installed: no public header names a mapping.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>

#include "shm_protocol/segment_view.hpp"
#include "sigverify/shm_protocol/segment_access.hpp"

namespace sigverify::shm {

template <class Entry>
class RingProducer {
public:
    RingProducer() = default;
    // entries: the ring's `size` slots (a power of two); own: the shared word
    // of the tail, published here; peer: the consumer's head; start: the tail
    // this side begins from (never re-read from shared memory afterwards).
    RingProducer(Entry* entries, std::uint32_t size, CacheLineWord& own, CacheLineWord& peer, std::uint32_t start)
        : entries_(entries), size_(size), own_(&own), peer_(&peer), tail_(start) {}

    // The entries written and not yet released by the consumer, from its
    // published head (stored in *peer_index if asked); false when that head
    // is out of range.
    bool used(std::uint32_t& count, std::uint32_t* peer_index = nullptr) const {
        const std::uint32_t head = word(*peer_).load(std::memory_order_acquire);
        if (peer_index != nullptr) *peer_index = head;
        if (!ring_count_ok(head, tail_, size_)) return false;
        count = tail_ - head;
        return true;
    }
    // Writes e at the tail; the consumer may see it only after publish().
    // The caller has checked that the ring has room (used() < size()).
    void push(const Entry& e) {
        std::memcpy(&entries_[tail_ & (size_ - 1)], &e, sizeof e);
        ++tail_;
    }
    void publish() { word(*own_).store(tail_, std::memory_order_release); }

    std::uint32_t tail() const { return tail_; }
    std::uint32_t size() const { return size_; }

private:
    Entry* entries_ = nullptr;
    std::uint32_t size_ = 0;
    CacheLineWord* own_ = nullptr;
    CacheLineWord* peer_ = nullptr;
    std::uint32_t tail_ = 0;
};

template <class Entry>
class RingConsumer {
public:
    RingConsumer() = default;
    // As RingProducer's: own is the shared word of the head, peer the
    // producer's tail, start the head this side begins from.
    RingConsumer(const Entry* entries, std::uint32_t size, CacheLineWord& own, CacheLineWord& peer, std::uint32_t start)
        : entries_(entries), size_(size), own_(&own), peer_(&peer), head_(start) {}

    // The entries published and not yet consumed, from the producer's tail
    // (stored in *peer_index if asked); false when that tail is out of range.
    bool available(std::uint32_t& count, std::uint32_t* peer_index = nullptr) const {
        const std::uint32_t tail = word(*peer_).load(std::memory_order_acquire);
        if (peer_index != nullptr) *peer_index = tail;
        if (!ring_count_ok(head_, tail, size_)) return false;
        count = tail - head_;
        return true;
    }
    // A copy of the entry at the head, which moves on; the slot goes back to
    // the producer at release(). Only for entries available() counted.
    Entry pop() {
        Entry e;
        std::memcpy(&e, &entries_[head_ & (size_ - 1)], sizeof e);
        ++head_;
        return e;
    }
    void release() { word(*own_).store(head_, std::memory_order_release); }

    std::uint32_t head() const { return head_; }
    std::uint32_t size() const { return size_; }

private:
    const Entry* entries_ = nullptr;
    std::uint32_t size_ = 0;
    CacheLineWord* own_ = nullptr;
    CacheLineWord* peer_ = nullptr;
    std::uint32_t head_ = 0;
};

// Each side's ends of the two rings of a view (its pointers must be valid).
inline RingProducer<SubmissionEntry> submission_producer(const SegmentView& v, std::uint32_t start) {
    return {v.sqes, v.sq_entries, v.header->sq_tail, v.header->sq_head, start};
}
inline RingConsumer<SubmissionEntry> submission_consumer(const SegmentView& v, std::uint32_t start) {
    return {v.sqes, v.sq_entries, v.header->sq_head, v.header->sq_tail, start};
}
inline RingProducer<CompletionEntry> completion_producer(const SegmentView& v, std::uint32_t start) {
    return {v.cqes, v.cq_entries, v.header->cq_tail, v.header->cq_head, start};
}
inline RingConsumer<CompletionEntry> completion_consumer(const SegmentView& v, std::uint32_t start) {
    return {v.cqes, v.cq_entries, v.header->cq_head, v.header->cq_tail, start};
}

}  // namespace sigverify::shm
