// SPDX-License-Identifier: MIT
// Compiled, never run, by tests/client/test_nodiscard.sh: each line marked
// DROPPED throws away a status (or a result) of libsigverify's C++ API and must
// warn (-Wunused-result); every other line uses what it gets and must not.
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <stop_token>
#include <string>

#include "sigverify/client.hpp"
#include "sigverify/groups.hpp"
#include "sigverify/lbtc.hpp"

using namespace sigverify;

void dropped(Client& c, RowBatch& rb, ColumnBatch& cb, const RegisteredBuffer& buf, RegisteredBuffer& out,
             const std::uint8_t* rows, std::uint8_t* results, std::stop_token stop) {
    Status s;
    std::string m;
    Client::connect();                                                          // DROPPED
    Client::connect({}, s, m);                                                  // DROPPED
    c.verify_ecdsa(rows, 1, 0, results);                                        // DROPPED
    c.verify_schnorr(rows, 1, 0, results);                                      // DROPPED
    c.collect_ecdsa(results, 1, 3);                                             // DROPPED
    c.run(wire::RowSpan{}, wire::Mode::results, results);                       // DROPPED
    c.run(wire::RowSpan{}, wire::Mode::results, results, 0, stop);              // DROPPED
    c.run_columns(Columns{}, wire::Mode::results, results);                     // DROPPED
    c.verify_ecdsa_columns(rows, rows, rows, 1, results);                       // DROPPED
    c.verify_registered_columns(buf, RegisteredColumns{}, results);             // DROPPED
    c.verify_registered_columns(RegisteredColumnBuffers{}, results);            // DROPPED
    c.verify_registered_columns(RegisteredColumnBuffers{}, results, 0, stop);   // DROPPED
    c.register_buffer(3, 0, 64, out);                                           // DROPPED
    c.register_buffer(3, 0, 64);                                                // DROPPED
    c.reserve(wire::RecordKind::ecdsa, 0, 1, rb);                               // DROPPED
    c.reserve_columns(wire::RecordKind::ecdsa, 0, 1, cb);                       // DROPPED
    c.submit(rb, wire::Mode::results);                                          // DROPPED
    c.submit(cb, wire::Mode::results);                                          // DROPPED
    c.wait(rb);                                                                 // DROPPED
    c.poll(cb);                                                                 // DROPPED
    c.cancel(rb);                                                               // DROPPED
    c.cancel(cb);                                                               // DROPPED
    c.ping();                                                                   // DROPPED
    DaemonInfo info;
    c.info(info);                                                               // DROPPED
    const std::atomic<bool> flag{false};
    c.run(wire::RowSpan{}, wire::Mode::results, results, 0, &flag);             // DROPPED
    lbtc::ecdsa_verify_columns(rows, rows, rows, 1, results, 0);                // DROPPED
    lbtc::schnorr_verify_columns(rows, rows, rows, 1, nullptr, 0);              // DROPPED
    lbtc::gpu_available();                                                      // DROPPED
    BatchResult{}.ok();                                                         // DROPPED
    compute_group_verdicts(GroupKind::multisig, {}, {});                        // DROPPED
    group_rows_from_ecdsa_correlate({});                                        // DROPPED
    single_signature_group_rows({});                                            // DROPPED
}

// The control: the same calls, their results used (or dropped on purpose
// with a cast to void, which [[nodiscard]] allows).
int used(Client& c, RowBatch& rb, const std::uint8_t* rows, std::uint8_t* results) {
    int bad = 0;
    auto client = Client::connect();
    bad += client == nullptr;
    const BatchResult r = c.verify_ecdsa(rows, 1, 0, results);
    bad += !r.ok();
    if (c.reserve(wire::RecordKind::ecdsa, 0, 1, rb) != Status::ok) ++bad;
    if (c.submit(rb, wire::Mode::results) != Status::ok) ++bad;
    bad += !c.wait(rb).ok();
    (void)c.cancel(rb);  // a deliberate drop: the cast says so
    bad += c.ping() != Status::ok;
    bad += static_cast<int>(single_signature_group_rows({}).size());
    c.release(rb);       // returns nothing: no warning
    return bad;
}
