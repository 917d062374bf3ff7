// SPDX-License-Identifier: MIT
// sigverifyd's exit statuses, in the style of sysexits.h, so that a service
// manager can tell a failure worth a restart (1) from one that a restart
// cannot fix (64, 78). systemd/sigverifyd.service.in lists the latter in
// RestartPreventExitStatus= and tests/ops/test_systemd.sh checks the two agree;
// docs/operations.md ("Exit status") is the operator's copy of this list.
#pragma once

namespace sigverify::daemon::exit_status {

// Stopped by SIGTERM/SIGINT after the bounded shutdown; also --help and --version.
inline constexpr int clean_stop = 0;
// A failure at start-up or run time that may pass: no usable GPU with
// --backend gpu, a failed self-test, a socket that cannot be created, an
// already running daemon.
inline constexpr int runtime_failure = 1;
// The command line is wrong: an unknown flag, a bad value, a missing argument
// (EX_USAGE).
inline constexpr int usage_error = 64;
// The configuration is wrong or cannot be served: the --config file is
// missing, unreadable or invalid (unknown key, bad value), or the options ask
// for what the daemon cannot do here, such as a --max-clients the descriptor
// limit cannot serve or a --group that does not exist (EX_CONFIG).
inline constexpr int config_error = 78;

}  // namespace sigverify::daemon::exit_status
