// SPDX-License-Identifier: MIT
// The rate limit of the log lines a client can trigger (daemon/ops/log_limit.hpp).
#include <chrono>
#include <memory>
#include <sstream>
#include <thread>

#include <catch2/catch.hpp>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "daemon/ops/log_limit.hpp"
#include "daemon_fixture.hpp"

using namespace sigverify;
using namespace sigverify::test;

TEST_CASE("LogLimit: a burst per key per interval, then one summary with the exact count", "[daemon][log]") {
    std::ostringstream out;
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
    spdlog::logger log("t", sink);
    log.set_pattern("%v");
    daemon::LogLimit limit(3, std::chrono::milliseconds(200));
    int written = 0;
    for (int i = 0; i < 50; ++i) written += limit.allow(log, "a");
    CHECK(written == 3);
    CHECK(limit.allow(log, "b"));  // keys are independent
    limit.flush(log);              // the interval has not ended: nothing yet
    CHECK(out.str().find("suppressed") == std::string::npos);
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    limit.flush(log);
    log.flush();
    CHECK(out.str() == "suppressed 47 similar messages (a) in the last 0 s\n");
    // A new interval: the burst again, and nothing left to summarize.
    CHECK(limit.allow(log, "a"));
    limit.flush(log);
    CHECK(DaemonProcess::count(out.str(), "suppressed") == 1);
}
