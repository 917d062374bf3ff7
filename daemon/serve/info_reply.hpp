// SPDX-License-Identifier: MIT
// The daemon's answer to an info request (shm_protocol/info_message.hpp):
// what it is, built from the daemon's context and its backends' state now.
#pragma once

#include <cstddef>
#include <cstdint>

#include "daemon/serve/daemon_context.hpp"
#include "shm_protocol/info_message.hpp"
#include "sigverify/shm_protocol/segment_layout.hpp"

namespace sigverify::daemon {

// Answers the request of `size` bytes at `data`. A request of another size or
// with reserved bits set gets status invalid_argument (the caller counts it).
shm::InfoReply make_info_reply(const DaemonContext& ctx, const std::uint8_t* data, std::size_t size);

// A refusal: the reply's header (versions, epoch) with `status`, nothing else.
shm::InfoReply refused_info_reply(const DaemonContext& ctx, shm::Status status);

}  // namespace sigverify::daemon
