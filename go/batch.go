// SPDX-License-Identifier: MIT

package sigverify

// One batch call: the caller's columns cut into pieces (at most a quarter
// of the arena, 32,768 rows), each reserved, copied in, submitted and, with
// up to pipelineDepth pieces in flight, waited for oldest first, checked and
// copied out. Rows are done in order, so on a failure the rows from the
// failed piece on are exactly the ones without a verdict: the fallback
// verifies them, or the call returns the error. A piece the daemon fails
// while the session lives (backend error) is verified by the fallback alone
// and the batch goes on.

import (
	"context"
	"errors"
	"runtime/debug"
)

const pipelineDepth = 4

type batch struct {
	c                         *Client
	kind                      Kind
	enc                       SigEncoding
	msgs, keys, sigs, results []byte
	n                         int
	done                      <-chan struct{}
	next                      int // first row not submitted
	valid                     int
	inflight                  [pipelineDepth]piece
	head, count               int
}

func (b *batch) push(p piece) {
	b.inflight[(b.head+b.count)%pipelineDepth] = p
	b.count++
}

func (b *batch) pop() piece {
	p := b.inflight[b.head]
	b.head = (b.head + 1) % pipelineDepth
	b.count--
	return p
}

// run verifies the batch; valid counts its valid rows.
func (b *batch) run(ctx context.Context) (valid int, err error) {
	b.done = ctx.Done()
	s, err := b.c.current(ctx)
	if err != nil {
		return b.fallbackOr(0, err)
	}
	if !s.enter() {
		return b.fallbackOr(0, s.deadErr)
	}
	defer s.leave()
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	defer func() {
		if r := recover(); r != nil {
			if !isMemoryFault(r) {
				panic(r)
			}
			s.kill(errSegmentFault)
			valid, err = b.abort(s, b.next, errSegmentFault)
		}
	}()
	if s.ended() {
		return b.fallbackOr(0, errSessionEnded)
	}
	return b.pipeline(s)
}

func (b *batch) pipeline(s *session) (int, error) {
	chunk := s.maxPieceRows(b.kind)
	for b.next < b.n || b.count > 0 {
		if b.next < b.n && b.count < pipelineDepth {
			rows := chunk
			if b.n-b.next < rows {
				rows = b.n - b.next
			}
			p, err := s.reserve(b.done, b.kind, rows, b.count == 0)
			if err == nil {
				p.begin = b.next
				b.fill(s, p)
				if err = s.submit(b.done, p, b.kind, b.enc); err != nil {
					s.release(p)
					return b.abort(s, b.next, err)
				}
				b.push(p)
				b.next += rows
				continue
			}
			if err != errNoSpace {
				return b.abort(s, b.next, err)
			}
		}
		p := b.pop()
		if err := b.collect(s, p); err != nil {
			if err != errCtxDone && !s.isDead() && b.c.cfg.fallback != nil && errors.Is(err, ErrUnavailable) {
				b.runFallback(p.begin, p.begin+p.rows)
				continue
			}
			return b.abort(s, p.begin, err)
		}
	}
	return b.valid, nil
}

// fill copies the piece's rows of the caller's columns into the arena.
func (b *batch) fill(s *session, p piece) {
	msg, key, sig := s.columns(p, b.kind)
	kw := keyWidth(b.kind)
	copy(msg, b.msgs[p.begin*messageWidth:])
	copy(key, b.keys[p.begin*kw:])
	copy(sig, b.sigs[p.begin*signatureWidth:])
}

// collect waits for a piece and takes its verdicts, checking them: every
// byte 0 or 1, the completion's counts those of the bytes.
func (b *batch) collect(s *session, p piece) error {
	r, err := s.wait(b.done, p)
	if err != nil {
		if err == errCtxDone {
			s.cancel(p)
		}
		s.release(p)
		return err
	}
	if r.epoch != s.hdr.epoch {
		s.release(p)
		return errStale
	}
	if st := Status(r.status); st != StatusOK {
		s.release(p)
		return statusErr(st)
	}
	res := s.results(p)
	valid, bad := 0, false
	var out []byte
	if b.results != nil {
		out = b.results[p.begin : p.begin+p.rows]
		copy(out, res) // our own copy: the daemon cannot change it under the check
		res = out
	}
	for _, v := range res {
		bad = bad || v > 1
		valid += int(v)
	}
	s.release(p)
	if bad || r.valid != uint64(valid) || r.invalid != uint64(p.rows-valid) {
		for i := range out {
			out[i] = 0
		}
		if bad {
			s.kill(errBadVerdict)
			return errBadVerdict
		}
		s.kill(errCounts)
		return errCounts
	}
	b.valid += valid
	return nil
}

// abort gives up the pieces in flight (cancelling them in the daemon when
// the caller's context ended) and falls back for every row from the oldest
// one without a verdict.
func (b *batch) abort(s *session, from int, err error) (int, error) {
	if b.count > 0 && b.inflight[b.head].begin < from {
		from = b.inflight[b.head].begin
	}
	for b.count > 0 {
		p := b.pop()
		if err == errCtxDone {
			s.cancel(p)
		}
		s.release(p)
	}
	return b.fallbackOr(from, err)
}

// fallbackOr verifies rows [from, n) with the fallback when err means the
// daemon could not, else returns err.
func (b *batch) fallbackOr(from int, err error) (int, error) {
	if err == errCtxDone || b.c.cfg.fallback == nil || !errors.Is(err, ErrUnavailable) {
		return b.valid, err
	}
	b.runFallback(from, b.n)
	return b.valid, nil
}

func (b *batch) runFallback(from, to int) {
	f := b.c.cfg.fallback
	kw := keyWidth(b.kind)
	for i := from; i < to; i++ {
		m := b.msgs[i*messageWidth : (i+1)*messageWidth : (i+1)*messageWidth]
		k := b.keys[i*kw : (i+1)*kw : (i+1)*kw]
		g := b.sigs[i*signatureWidth : (i+1)*signatureWidth : (i+1)*signatureWidth]
		ok := f(b.kind, b.enc, m, k, g)
		if ok {
			b.valid++
		}
		if b.results != nil {
			if ok {
				b.results[i] = 1
			} else {
				b.results[i] = 0
			}
		}
	}
}
