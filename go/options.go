// SPDX-License-Identifier: MIT

package sigverify

import (
	"os"
	"time"
)

// Kind names the signature scheme of a row (wire::RecordKind).
type Kind uint8

// The schemes.
const (
	ECDSA   Kind = kindECDSA
	Schnorr Kind = kindSchnorr
)

func (k Kind) String() string {
	if k == Schnorr {
		return "schnorr"
	}
	return "ecdsa"
}

// SigEncoding is the layout of a 64-byte ECDSA signature (wire::SigEncoding).
type SigEncoding uint8

// The ECDSA signature encodings.
const (
	// Compact: r ‖ s, each 32 bytes big-endian (what Go callers usually hold).
	Compact SigEncoding = 1
	// Opaque: r then s, each 32 bytes little-endian: libsecp256k1's
	// in-memory signature as libbitcoin stores it.
	Opaque SigEncoding = 0
)

// Fallback verifies one row in this process. It is called, row by row, for
// the rows of a batch sigverifyd could not verify (ErrUnavailable); its
// verdicts are the call's. msg, key and sig are the row's columns (for ECDSA
// a 33-byte compressed key and a signature in enc); they are only valid
// during the call.
type Fallback func(kind Kind, enc SigEncoding, msg, key, sig []byte) bool

// Option configures Dial.
type Option func(*config)

type config struct {
	runtimeDir     string
	name           string
	connectTimeout time.Duration
	liveness       time.Duration
	arenaSize      uint64
	ringEntries    uint32
	fallback       Fallback
	window         time.Duration
	maxCoalesce    int
	protocol       uint32 // tests: the protocol version the hello claims
}

// Defaults.
const (
	DefaultConnectTimeout = 2 * time.Second
	DefaultWindow         = 200 * time.Microsecond
	DefaultMaxCoalesce    = 4096
	defaultLiveness       = 20 * time.Millisecond
	reconnectInterval     = 500 * time.Millisecond
)

func defaultConfig(dir string) config {
	return config{
		runtimeDir:     dir,
		connectTimeout: DefaultConnectTimeout,
		liveness:       defaultLiveness,
		window:         DefaultWindow,
		maxCoalesce:    DefaultMaxCoalesce,
		protocol:       protocolVersion,
	}
}

// WithFallback verifies the rows sigverifyd cannot (daemon absent, killed,
// restarted, stopping, failing a batch) in process with f, instead of
// returning ErrUnavailable. With a fallback, Dial succeeds without a daemon
// and the client connects when one appears.
func WithFallback(f Fallback) Option { return func(c *config) { c.fallback = f } }

// WithConnectTimeout bounds the connect and the handshake (default 2 s).
func WithConnectTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.connectTimeout = d
		}
	}
}

// WithName is the client name the daemon logs (default "go-pid-N").
func WithName(name string) Option { return func(c *config) { c.name = name } }

// WithArenaSize asks for an arena of this many bytes (the daemon bounds it;
// 0: the daemon's default).
func WithArenaSize(bytes uint64) Option { return func(c *config) { c.arenaSize = bytes } }

// WithRingEntries asks for this many ring entries (a power of two; the
// daemon bounds it; 0: the daemon's default).
func WithRingEntries(n uint32) Option { return func(c *config) { c.ringEntries = n } }

// WithLiveness is the longest sleep between checks that the daemon still
// lives (default 20 ms).
func WithLiveness(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.liveness = d
		}
	}
}

// WithCoalescing sets how VerifySchnorr and VerifyECDSA gather single
// calls: a batch is sent when it holds max rows, when window has passed
// since its first row, or at once when every caller is already waiting
// (defaults: 200 µs, 4096 rows).
func WithCoalescing(window time.Duration, max int) Option {
	return func(c *config) {
		if window > 0 {
			c.window = window
		}
		if max > 0 {
			c.maxCoalesce = max
		}
	}
}

// DefaultRuntimeDir is $SIGVERIFY_RUNTIME_DIR, else /run/sigverifyd (as the
// daemon and libsigverify).
func DefaultRuntimeDir() string {
	if d := os.Getenv("SIGVERIFY_RUNTIME_DIR"); d != "" {
		return d
	}
	return "/run/sigverifyd"
}
