// SPDX-License-Identifier: MIT

package sigverify

// Single calls gathered into batches. VerifySchnorr and VerifyECDSA hand
// their row to the kind's dispatcher goroutine, which fills a batch and
// sends it when it holds the maximum rows, when the window has passed since
// its first row, or at once when every goroutine inside a single call of
// this kind already has its row in this batch or in one in flight (nobody
// else can come: a lone caller never waits for the window). Up to
// coalesceDepth batches are in flight; each runs through the batch path
// (pipeline, checks, fallback) and answers its callers.

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

const coalesceDepth = 4

type request struct {
	msg   [messageWidth]byte
	key   [ecdsaKeyWidth]byte
	sig   [signatureWidth]byte
	valid bool
	err   error
	state int32 // 0 waiting, 1 abandoned by its caller, 2 answered
	done  chan struct{}
}

var requestPool = sync.Pool{New: func() interface{} { return &request{done: make(chan struct{}, 1)} }}

type cbatch struct {
	reqs                      []*request
	msgs, keys, sigs, results []byte
	n                         int
}

type coalescer struct {
	c       *Client
	kind    Kind
	once    sync.Once
	reqs    chan *request
	free    chan *cbatch
	work    chan *cbatch
	quit    chan struct{}
	stopped sync.WaitGroup
	callers int64 // goroutines inside a single call
	inBatch int64 // rows sent in batches not answered yet
}

func (q *coalescer) init(c *Client, kind Kind) {
	q.c, q.kind = c, kind
	q.quit = make(chan struct{})
}

// start makes the channels, buffers and goroutines on first use.
func (q *coalescer) start() {
	q.once.Do(func() {
		max := q.c.cfg.maxCoalesce
		q.reqs = make(chan *request, max)
		q.free = make(chan *cbatch, coalesceDepth)
		q.work = make(chan *cbatch, coalesceDepth)
		kw := keyWidth(q.kind)
		for i := 0; i < coalesceDepth; i++ {
			q.free <- &cbatch{reqs: make([]*request, max), msgs: make([]byte, max*messageWidth),
				keys: make([]byte, max*kw), sigs: make([]byte, max*signatureWidth), results: make([]byte, max)}
		}
		q.stopped.Add(1 + coalesceDepth)
		go q.dispatch()
		for i := 0; i < coalesceDepth; i++ {
			go q.worker()
		}
	})
}

// stop ends the goroutines (Client.Close); waiting callers get ErrClosed.
func (q *coalescer) stop() {
	close(q.quit)
	started := true
	q.once.Do(func() { started = false })
	if started {
		q.stopped.Wait()
	}
}

func (q *coalescer) verify(ctx context.Context, msg, key, sig []byte, enc SigEncoding) (bool, error) {
	kw := keyWidth(q.kind)
	if len(msg) != messageWidth || len(key) != kw || len(sig) != signatureWidth {
		return false, errSingleSizes
	}
	if enc != Compact && enc != Opaque {
		return false, errEncoding
	}
	select {
	case <-q.quit:
		return false, errClosed
	default:
	}
	q.start()
	atomic.AddInt64(&q.callers, 1)
	defer atomic.AddInt64(&q.callers, -1)
	r := requestPool.Get().(*request)
	r.state, r.valid, r.err = 0, false, nil
	copy(r.msg[:], msg)
	copy(r.key[:kw], key)
	if q.kind == ECDSA && enc == Opaque {
		// The batch goes compact: r and s byte-reversed, as the reference
		// itself reads an opaque signature (swap_sig_encoding).
		for i := 0; i < 32; i++ {
			r.sig[i], r.sig[32+i] = sig[31-i], sig[63-i]
		}
	} else {
		copy(r.sig[:], sig)
	}
	select {
	case q.reqs <- r:
	case <-ctx.Done():
		requestPool.Put(r)
		return false, ctx.Err()
	case <-q.quit:
		return false, errClosed
	}
	var ended error
	select {
	case <-r.done:
	case <-ctx.Done():
		ended = ctx.Err()
	case <-q.quit:
		ended = errClosed
	}
	if ended != nil && atomic.CompareAndSwapInt32(&r.state, 0, 1) {
		return false, ended // the dispatcher or a worker recycles r
	}
	if ended != nil {
		<-r.done // answered meanwhile
	}
	valid, err := r.valid, r.err
	requestPool.Put(r)
	return valid, err
}

// answer hands a request its verdict (or recycles it when its caller left).
func answer(r *request, valid bool, err error) {
	r.valid, r.err = valid, err
	if atomic.CompareAndSwapInt32(&r.state, 0, 2) {
		r.done <- struct{}{}
		return
	}
	requestPool.Put(r)
}

func (q *coalescer) add(b *cbatch, r *request) {
	kw := keyWidth(q.kind)
	copy(b.msgs[b.n*messageWidth:], r.msg[:])
	copy(b.keys[b.n*kw:], r.key[:kw])
	copy(b.sigs[b.n*signatureWidth:], r.sig[:])
	b.reqs[b.n] = r
	b.n++
}

// ready: the batch is full, or every caller inside has its row sent.
func (q *coalescer) ready(b *cbatch) bool {
	return b.n >= q.c.cfg.maxCoalesce || int64(b.n)+atomic.LoadInt64(&q.inBatch) >= atomic.LoadInt64(&q.callers)
}

func (q *coalescer) dispatch() {
	defer q.stopped.Done()
	defer close(q.work)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	b := <-q.free
	for {
		select {
		case r := <-q.reqs:
			q.add(b, r)
		case <-q.quit:
			q.drain(b)
			return
		}
		if !q.gather(b, timer) {
			q.drain(b)
			return
		}
		atomic.AddInt64(&q.inBatch, int64(b.n))
		q.work <- b
		select {
		case b = <-q.free:
		case <-q.quit:
			b = <-q.free // a worker hands one back once its batch is answered
			q.drain(b)
			return
		}
	}
}

// gather adds rows until the batch is ready or the window has passed;
// false when the client closes meanwhile.
func (q *coalescer) gather(b *cbatch, timer *time.Timer) bool {
	if q.ready(b) {
		return true
	}
	timer.Reset(q.c.cfg.window)
	defer func() {
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}()
	for !q.ready(b) {
		select {
		case r := <-q.reqs:
			q.add(b, r)
		case <-timer.C:
			return true
		case <-q.quit:
			return false
		}
	}
	return true
}

// drain answers the batch being filled and every queued request: closed.
func (q *coalescer) drain(b *cbatch) {
	for i := 0; i < b.n; i++ {
		answer(b.reqs[i], false, errClosed)
		b.reqs[i] = nil
	}
	b.n = 0
	for {
		select {
		case r := <-q.reqs:
			answer(r, false, errClosed)
		default:
			return
		}
	}
}

func (q *coalescer) worker() {
	defer q.stopped.Done()
	kw := keyWidth(q.kind)
	enc := Opaque // Schnorr rows carry no encoding (0)
	if q.kind == ECDSA {
		enc = Compact
	}
	for b := range q.work {
		n := b.n
		_, err := q.c.verifyBatch(context.Background(), q.kind, enc, b.msgs[:n*messageWidth], b.keys[:n*kw],
			b.sigs[:n*signatureWidth], b.results[:n])
		atomic.AddInt64(&q.inBatch, -int64(n))
		for i := 0; i < n; i++ {
			answer(b.reqs[i], err == nil && b.results[i] == 1, err)
			b.reqs[i] = nil
		}
		b.n = 0
		q.free <- b
	}
}

var errSingleSizes = &Error{Op: "verify", Status: StatusInvalidArgument, kind: ErrInvalidInput,
	Msg: "message, key or signature of the wrong length"}

// VerifySchnorr verifies one BIP-340 signature (msg 32 bytes, key 32-byte
// x-only, sig 64), gathered with the concurrent calls of other goroutines
// into one batch (WithCoalescing). A non-nil error is no verdict.
func (c *Client) VerifySchnorr(ctx context.Context, msg, key, sig []byte) (bool, error) {
	return c.coalescers[Schnorr].verify(ctx, msg, key, sig, Opaque)
}

// VerifyECDSA verifies one ECDSA signature (msg a 32-byte hash, key 33-byte
// compressed, sig 64 bytes in enc), coalesced as VerifySchnorr.
func (c *Client) VerifyECDSA(ctx context.Context, msg, key, sig []byte, enc SigEncoding) (bool, error) {
	return c.coalescers[ECDSA].verify(ctx, msg, key, sig, enc)
}
