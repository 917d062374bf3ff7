// SPDX-License-Identifier: MIT
// sigverifyd's log destinations and formats: stderr or --log-file as text or
// JSON lines, or, when systemd connected stderr to the journal, the journal's
// own protocol (its priorities, its timestamps). The logger writes through a
// dist sink so that SIGHUP can swap the destination (a rotated log file).
#pragma once

#include <memory>

#include <spdlog/sinks/dist_sink.h>
#include <spdlog/spdlog.h>

#include "daemon/ops/config.hpp"

namespace sigverify::daemon {

// True when $JOURNAL_STREAM names our stderr (systemd's way to say "stderr is
// the journal"; a redirected stderr no longer matches).
bool stderr_is_journal();

// What --log-format auto means here: json and text as asked, automatic = the
// journal when stderr_is_journal() and libsystemd was found at build time
// (LogFormat::automatic stands for "journal" in the result), else text.
LogFormat effective_log_format(const Config& cfg);

// One sink for cfg's destination (--log-file, else stderr) in cfg's format.
// Throws spdlog::spdlog_ex when the log file cannot be opened.
spdlog::sink_ptr make_log_sink(const Config& cfg);

// The daemon logger: make_log_sink behind `dist`, at cfg.log_level.
std::shared_ptr<spdlog::logger> make_logger(const Config& cfg, std::shared_ptr<spdlog::sinks::dist_sink_mt>& dist);

// A formatter writing one JSON object per line: {"time":"2026-01-02T03:04:05.678Z","level":"info","message":"..."}.
std::unique_ptr<spdlog::formatter> make_json_formatter();

}  // namespace sigverify::daemon
