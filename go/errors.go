// SPDX-License-Identifier: MIT

package sigverify

import (
	"errors"
	"fmt"
)

// Status is a status code of the ring ABI (docs/protocol.md §5): the numbers
// of completions, handshake replies, the C++ API and the C ABI.
type Status uint32

// The status codes.
const (
	StatusOK               Status = 0
	StatusInvalidArgument  Status = 1
	StatusBadEntry         Status = 2
	StatusBadRange         Status = 3
	StatusProtocolVersion  Status = 4
	StatusPermissionDenied Status = 5
	StatusBusy             Status = 6
	StatusShuttingDown     Status = 7
	StatusCancelled        Status = 8
	StatusBackendError     Status = 9
	StatusUnreachable      Status = 10
	StatusDisconnected     Status = 11
	StatusTimeout          Status = 12
	StatusRingFull         Status = 13
	StatusStaleEpoch       Status = 14
	StatusTooLarge         Status = 15
	StatusHandshake        Status = 16
	StatusBadSegment       Status = 17
	StatusSystemError      Status = 18
	StatusPending          Status = 19
	StatusNotFound         Status = 20
	StatusBufferLost       Status = 21
	statusCount                   = 22
)

var statusText = [statusCount]string{
	"ok", "invalid argument", "malformed submission entry", "submission offsets or lengths outside the arena",
	"protocol version mismatch", "permission denied", "daemon busy", "daemon shutting down", "batch cancelled",
	"verification backend error", "daemon unreachable", "daemon disconnected", "timed out", "ring or arena full",
	"completion from a stale daemon epoch", "request over a limit", "malformed handshake", "invalid shared segment",
	"system error", "pending", "not found", "registered buffer lost",
}

func (s Status) String() string {
	if s < statusCount {
		return statusText[s]
	}
	return fmt.Sprintf("status %d", uint32(s))
}

// The errors a call may be tested for with errors.Is.
var (
	// ErrUnavailable: no verdict, because sigverifyd is not there (no
	// socket, refused as busy), went away (killed, stopped, restarted), ended
	// the session, or failed the batch. A batch that fails so is never
	// reported invalid: its rows are verified by the fallback (WithFallback)
	// or the call returns this error.
	ErrUnavailable = errors.New("sigverifyd unavailable")
	// ErrProtocol: the daemon broke the ring ABI (an index out of range, a
	// verdict byte that is neither 0 nor 1, counts that disagree with the
	// verdicts, a malformed reply). The session is dropped; such an error is
	// also ErrUnavailable (the fallback applies).
	ErrProtocol = errors.New("sigverifyd broke the ring protocol")
	// ErrIncompatible: the daemon speaks another protocol version or ring
	// ABI major, or lacks a minor this client needs.
	ErrIncompatible = errors.New("sigverifyd speaks an incompatible protocol")
	// ErrInvalidInput: the caller's slices do not describe a batch (a
	// column length that is not a multiple of its width or does not match
	// the others, a results slice too short, an unknown encoding).
	ErrInvalidInput = errors.New("invalid input")
	// ErrClosed: the Client was closed.
	ErrClosed = errors.New("sigverify client closed")
)

// Error is the error of a failed call: the ABI status (when one applies)
// and the reason in words.
type Error struct {
	Op     string // what failed: "dial", "verify", ...
	Status Status
	Msg    string
	kind   error // one of the Err* sentinels, or nil
}

func (e *Error) Error() string {
	if e.Msg == "" {
		return "sigverify: " + e.Op + ": " + e.Status.String()
	}
	return "sigverify: " + e.Op + ": " + e.Msg
}

// Is reports the sentinel the error belongs to; a protocol violation is also
// ErrUnavailable.
func (e *Error) Is(target error) bool {
	if target == e.kind {
		return true
	}
	return target == ErrUnavailable && e.kind == ErrProtocol
}

// statusKind is the sentinel of a status from the daemon.
func statusKind(s Status) error {
	switch s {
	case StatusBusy, StatusShuttingDown, StatusCancelled, StatusBackendError, StatusUnreachable,
		StatusDisconnected, StatusTimeout, StatusStaleEpoch, StatusSystemError:
		return ErrUnavailable
	case StatusProtocolVersion:
		return ErrIncompatible
	case StatusInvalidArgument:
		return ErrInvalidInput
	case StatusPermissionDenied:
		return nil
	}
	return ErrProtocol
}

func newError(op string, s Status, kind error, format string, args ...interface{}) *Error {
	return &Error{Op: op, Status: s, Msg: fmt.Sprintf(format, args...), kind: kind}
}

// Preallocated errors of the batch path (no allocation per failed call there
// either).
var (
	errShortResults = &Error{Op: "verify", Status: StatusInvalidArgument, kind: ErrInvalidInput,
		Msg: "results slice shorter than the batch"}
	errClosed = &Error{Op: "verify", Status: StatusDisconnected, kind: ErrClosed, Msg: "client closed"}
)

func columnError(what string, got, width, n int) *Error {
	return newError("verify", StatusInvalidArgument, ErrInvalidInput,
		"%s column: %d bytes, want %d rows x %d", what, got, n, width)
}

// The session's and the batch path's errors, made once.
var (
	errSessionEnded     = &Error{Op: "verify", Status: StatusDisconnected, kind: ErrUnavailable, Msg: "sigverifyd ended the session"}
	errSocketClosed     = &Error{Op: "verify", Status: StatusDisconnected, kind: ErrUnavailable, Msg: "sigverifyd went away (control socket closed)"}
	errUnexpectedPacket = &Error{Op: "verify", Status: StatusHandshake, kind: ErrProtocol, Msg: "sigverifyd sent an unexpected packet on the control socket"}
	errSegmentFault     = &Error{Op: "verify", Status: StatusBadSegment, kind: ErrProtocol, Msg: "the shared segment shrank under the client"}
	errCqIndex          = &Error{Op: "verify", Status: StatusBadSegment, kind: ErrProtocol, Msg: "sigverifyd published an out-of-range completion index"}
	errSqIndex          = &Error{Op: "verify", Status: StatusBadSegment, kind: ErrProtocol, Msg: "sigverifyd published an out-of-range submission index"}
	errProtocolState    = &Error{Op: "verify", Status: StatusBadSegment, kind: ErrProtocol, Msg: "completion for a slot in the wrong state"}
	errBadVerdict       = &Error{Op: "verify", Status: StatusBadSegment, kind: ErrProtocol, Msg: "sigverifyd wrote a verdict byte that is neither 0 nor 1"}
	errCounts           = &Error{Op: "verify", Status: StatusBadSegment, kind: ErrProtocol, Msg: "sigverifyd's counts disagree with its verdicts"}
	errStale            = &Error{Op: "verify", Status: StatusStaleEpoch, kind: ErrUnavailable, Msg: "completion from another daemon epoch"}
	errNoSpace          = &Error{Op: "verify", Status: StatusRingFull, Msg: "no slot or arena space"}
	errCtxDone          = errors.New("context done")
	statusErrs          [statusCount + 1]*Error
)

func init() {
	for i := range statusErrs {
		s := Status(i)
		if i == statusCount {
			s = Status(^uint32(0))
		}
		statusErrs[i] = &Error{Op: "verify", Status: s, kind: statusKind(s), Msg: "sigverifyd answered: " + s.String()}
	}
}

// statusErr is the preallocated error of a completion status.
func statusErr(s Status) *Error {
	if s >= statusCount {
		return statusErrs[statusCount]
	}
	return statusErrs[s]
}
