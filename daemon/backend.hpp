// The verification backend interface of sigverifyd.
//
// The scheduler hands a backend one chunk at a time: rows [begin, end) of a
// RowSpan that lives in a client's arena, the mode, and the results pointer
// (results[0] is row 0 of the span, as in reference::RowVerifier::run). A
// backend is called from `concurrency()` worker threads at once, each with its
// own worker index; it must write verdicts only inside [begin, end) and must
// never throw. A GPU backend plugs in behind the same interface; a failure it
// reports on a chunk makes the scheduler re-run that chunk on the CPU backend.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "reference/reference_verifier.hpp"
#include "shm_protocol/segment_access.hpp"
#include "shm_protocol/wire_format.hpp"

namespace sigverify::daemon {

struct ChunkResult {
    shm::Status status = shm::Status::ok;
    reference::Tally tally;
};

class Backend {
public:
    virtual ~Backend() = default;
    virtual std::string name() const = 0;
    // Worker threads that may call verify() concurrently (worker < concurrency()).
    virtual unsigned concurrency() const = 0;
    // Rows per chunk that keep this backend efficient while keeping chunks short.
    virtual std::size_t preferred_chunk_rows() const = 0;
    virtual ChunkResult verify(unsigned worker, const wire::RowSpan& rows, std::size_t begin,
                               std::size_t end, wire::Mode mode, std::uint8_t* results) noexcept = 0;
};

// The CPU backend: one reference::RowVerifier per worker thread.
class CpuBackend final : public Backend {
public:
    explicit CpuBackend(unsigned threads);
    ~CpuBackend() override;
    std::string name() const override { return "cpu"; }
    unsigned concurrency() const override;
    std::size_t preferred_chunk_rows() const override { return 256; }
    ChunkResult verify(unsigned worker, const wire::RowSpan& rows, std::size_t begin, std::size_t end,
                       wire::Mode mode, std::uint8_t* results) noexcept override;

private:
    std::unique_ptr<std::unique_ptr<reference::RowVerifier>[]> verifiers_;
    unsigned threads_;
};

}  // namespace sigverify::daemon
