// SPDX-License-Identifier: MIT

package sigverify

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Client is a connection to sigverifyd, safe for concurrent use by any
// number of goroutines. A session the daemon ends (killed, stopped,
// restarted) is replaced on a later call, at most every 500 ms, and never
// while a mutex is held across the connect.
type Client struct {
	cfg config

	mu       sync.Mutex
	sess     *session
	dialing  bool
	lastDial time.Time
	lastErr  error
	closed   bool

	coalescers [2]coalescer // by Kind
}

// Dial connects to the sigverifyd of runtimeDir ("" for DefaultRuntimeDir).
// Without WithFallback a daemon that cannot be reached is an error
// (errors.Is(err, ErrUnavailable)); with one, the client is returned
// anyway and connects on a later call. A refusal for permission or protocol
// version is always an error.
func Dial(runtimeDir string, opts ...Option) (*Client, error) {
	return DialContext(context.Background(), runtimeDir, opts...)
}

// DialContext is Dial with a context bounding the connect and handshake.
func DialContext(ctx context.Context, runtimeDir string, opts ...Option) (*Client, error) {
	if runtimeDir == "" {
		runtimeDir = DefaultRuntimeDir()
	}
	c := &Client{cfg: defaultConfig(runtimeDir)}
	for _, o := range opts {
		o(&c.cfg)
	}
	for k := range c.coalescers {
		c.coalescers[k].init(c, Kind(k))
	}
	c.lastDial = time.Now()
	d, err := handshake(ctx, &c.cfg)
	if err != nil {
		if c.cfg.fallback == nil || !errors.Is(err, ErrUnavailable) {
			return nil, err
		}
		c.lastErr = err
		return c, nil
	}
	c.sess = newSession(&c.cfg, d)
	return c, nil
}

var (
	defaultMu     sync.Mutex
	defaultClient *Client
	defaultTried  time.Time
	defaultErr    error
)

// Default is the process's shared client of DefaultRuntimeDir(), made on
// first use; a failed connect is retried by a later call (at most every
// 500 ms), and a client someone closed is replaced.
func Default() (*Client, error) {
	defaultMu.Lock()
	defer defaultMu.Unlock()
	if defaultClient != nil && !defaultClient.isClosed() {
		return defaultClient, nil
	}
	if defaultErr != nil && time.Since(defaultTried) < reconnectInterval {
		return nil, defaultErr
	}
	defaultTried = time.Now()
	defaultClient, defaultErr = Dial("")
	return defaultClient, defaultErr
}

func (c *Client) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// Close ends the session and stops the coalescing goroutines; calls in
// flight return ErrClosed. Close waits until the segment is unmapped.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	s := c.sess
	c.mu.Unlock()
	if s != nil {
		s.close(errClosed) // first: batches in flight end now
	}
	for k := range c.coalescers {
		c.coalescers[k].stop()
	}
	return nil
}

// current is the live session, reconnecting when the last one died (one
// caller dials, without the mutex; the others get the last error).
func (c *Client) current(ctx context.Context) (*session, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, errClosed
	}
	s := c.sess
	if s != nil && !s.isDead() {
		c.mu.Unlock()
		return s, nil
	}
	if s != nil && c.lastErr == nil {
		c.lastErr = s.deadErr
	}
	if c.dialing || time.Since(c.lastDial) < reconnectInterval {
		err := c.lastErr
		c.mu.Unlock()
		return nil, err
	}
	c.dialing, c.lastDial = true, time.Now()
	c.mu.Unlock()
	d, err := handshake(ctx, &c.cfg)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dialing = false
	if err != nil {
		c.lastErr = err
		return nil, err
	}
	ns := newSession(&c.cfg, d)
	if c.closed {
		go ns.close(errClosed)
		return nil, errClosed
	}
	c.sess, c.lastErr = ns, nil
	return ns, nil
}

// VerifySchnorrBatch verifies n BIP-340 signatures given as columns: msgs
// n×32 bytes, keys n×32 (x-only), sigs n×64. results, when not nil, gets
// one byte per row (1 valid, 0 invalid) in its first n bytes; it is
// zeroed first, so on an error it holds no false verdict to rely on: a
// non-nil error means the call gave no verdict for (some of) the rows.
// allValid is true when every row is valid. ctx ends the call (the daemon
// is told to drop the batch's rows not yet taken); the call then returns
// ctx.Err().
func (c *Client) VerifySchnorrBatch(ctx context.Context, msgs, keys, sigs, results []byte) (allValid bool, err error) {
	return c.verifyBatch(ctx, Schnorr, Opaque, msgs, keys, sigs, results)
}

// VerifyECDSABatch verifies n ECDSA signatures given as columns: msgs n×32
// bytes (the message hashes), keys n×33 (compressed SEC1), sigs n×64 in
// enc (Compact or Opaque). High-S signatures are valid (consensus rules);
// results and the return values as for VerifySchnorrBatch.
func (c *Client) VerifyECDSABatch(ctx context.Context, msgs, keys, sigs, results []byte, enc SigEncoding) (allValid bool, err error) {
	if enc != Compact && enc != Opaque {
		return false, errEncoding
	}
	return c.verifyBatch(ctx, ECDSA, enc, msgs, keys, sigs, results)
}

// checkColumns gives the row count of a column batch, or why it is not one.
func checkColumns(kind Kind, msgs, keys, sigs, results []byte) (int, error) {
	if len(msgs)%messageWidth != 0 {
		return 0, errMessageColumn
	}
	n := len(msgs) / messageWidth
	if len(keys) != n*keyWidth(kind) {
		return 0, columnError("key", len(keys), keyWidth(kind), n)
	}
	if len(sigs) != n*signatureWidth {
		return 0, columnError("signature", len(sigs), signatureWidth, n)
	}
	if results != nil && len(results) < n {
		return 0, errShortResults
	}
	return n, nil
}

var (
	errMessageColumn = &Error{Op: "verify", Status: StatusInvalidArgument, kind: ErrInvalidInput,
		Msg: "message column length is not a multiple of 32"}
	errEncoding = &Error{Op: "verify", Status: StatusInvalidArgument, kind: ErrInvalidInput,
		Msg: "ECDSA signature encoding is neither Compact nor Opaque"}
)

func (c *Client) verifyBatch(ctx context.Context, kind Kind, enc SigEncoding, msgs, keys, sigs, results []byte) (bool, error) {
	n, err := checkColumns(kind, msgs, keys, sigs, results)
	if err != nil {
		return false, err
	}
	if results != nil {
		results = results[:n]
		for i := range results {
			results[i] = 0 // fail closed
		}
	}
	if n == 0 {
		return true, nil
	}
	b := batch{c: c, kind: kind, enc: enc, msgs: msgs, keys: keys, sigs: sigs, results: results, n: n}
	valid, err := b.run(ctx)
	if err == errCtxDone {
		return false, ctx.Err()
	}
	return err == nil && valid == n, err
}
