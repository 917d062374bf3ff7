// SPDX-License-Identifier: MIT

package sigverify_test

// The client against a daemon that lies: every lie is an error (or ignored
// when harmless), never a crash, a hang or a verdict it did not earn; no
// descriptor leaks.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sigverify "a-seed-da0336f9.example/sigverify/go"
)

type handshakeScenario struct {
	name   string
	want   error
	serve  func(t *testing.T, c *net.UnixConn)
	acked  int // the MappedAck status the client must send (-1: none)
	inText string
}

// handshakeScenarios are the botched handshakes; a MappedAck the client
// sends goes to acks.
func handshakeScenarios(acks chan int) []handshakeScenario {
	type scenario = handshakeScenario
	seg := func(edit func(g *fakeSeg)) func(t *testing.T, c *net.UnixConn) {
		return func(t *testing.T, c *net.UnixConn) {
			g := newFakeSeg(t, 8, 8, 64<<10)
			if edit != nil {
				edit(g)
			}
			g.reply(c, 0, "", true)
			if a := ack(c); a != -1 {
				acks <- a
			}
		}
	}
	put32 := func(off int, v uint32) func(g *fakeSeg) {
		return func(g *fakeSeg) { binary.LittleEndian.PutUint32(g.mem[off:], v) }
	}
	return []scenario{
		{name: "short reply", want: sigverify.ErrProtocol, acked: -1, serve: func(t *testing.T, c *net.UnixConn) {
			c.Write(make([]byte, 100))
		}},
		{name: "bad reply magic", want: sigverify.ErrProtocol, acked: -1, serve: func(t *testing.T, c *net.UnixConn) {
			c.Write(make([]byte, 240))
		}},
		{name: "busy, text without NUL", want: sigverify.ErrUnavailable, acked: -1, inText: "AAAA?", serve: func(t *testing.T, c *net.UnixConn) {
			c.Write(helloReply(6, strings.Repeat("A", 150)+"\x07"+strings.Repeat("B", 49), 0, 0))
		}},
		{name: "unknown status", want: sigverify.ErrProtocol, acked: -1, serve: func(t *testing.T, c *net.UnixConn) {
			c.Write(helloReply(999, "no", 0, 0))
		}},
		{name: "protocol version", want: sigverify.ErrIncompatible, acked: -1, serve: func(t *testing.T, c *net.UnixConn) {
			c.Write(helloReply(4, "protocol version mismatch", 0, 0))
		}},
		{name: "ok without a segment", want: sigverify.ErrProtocol, acked: -1, serve: func(t *testing.T, c *net.UnixConn) {
			c.Write(helloReply(0, "", 1<<20, 1))
		}},
		{name: "closes at once", want: sigverify.ErrProtocol, acked: -1, serve: func(t *testing.T, c *net.UnixConn) {}},
		{name: "segment smaller than announced", want: sigverify.ErrProtocol, acked: -1, serve: func(t *testing.T, c *net.UnixConn) {
			g := newFakeSeg(t, 8, 8, 64<<10)
			c.WriteMsgUnix(helloReply(0, "", g.size+4096, g.epoch), unixRights(g), nil)
		}},
		{name: "huge segment", want: sigverify.ErrProtocol, acked: -1, serve: func(t *testing.T, c *net.UnixConn) {
			g := newFakeSeg(t, 8, 8, 64<<10)
			c.WriteMsgUnix(helloReply(0, "", 1<<62, g.epoch), unixRights(g), nil)
		}},
		{name: "bad segment magic", want: sigverify.ErrProtocol, acked: 17, serve: seg(put32(0, 1))},
		{name: "ABI major 2", want: sigverify.ErrProtocol, acked: 17, serve: seg(put32(4, 2|6<<16))},
		{name: "ABI minor 0", want: sigverify.ErrIncompatible, acked: -1, serve: seg(put32(4, 1))},
		{name: "ring masks", want: sigverify.ErrProtocol, acked: 17, serve: seg(put32(96, 3))},
		{name: "ring not a power of two", want: sigverify.ErrProtocol, acked: 17, serve: seg(put32(48, 6))},
		{name: "arena offset", want: sigverify.ErrProtocol, acked: 17, serve: seg(put32(80, 12288))},
		{name: "state not ready", want: sigverify.ErrProtocol, acked: 17, serve: seg(put32(128, 0))},
		{name: "epoch differs", want: sigverify.ErrProtocol, acked: 17, serve: seg(put32(24, 7))},
		{name: "silent", want: sigverify.ErrUnavailable, acked: -1, serve: func(t *testing.T, c *net.UnixConn) {
			waitHangup(c)
		}},
	}
}

// Handshakes a daemon may botch: each Dial fails with the error it should,
// in time, and leaves no descriptor open.
func TestHostileHandshakes(t *testing.T) {
	acks := make(chan int, 1)
	scenarios := handshakeScenarios(acks)
	warm := newStandIn(t, func(c *net.UnixConn, hello []byte) {})
	if _, err := sigverify.Dial(warm.dir); err == nil {
		t.Fatal("Dial of a mute stand-in succeeded")
	}
	before := openFDs(t)
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			s := newStandIn(t, func(c *net.UnixConn, hello []byte) { sc.serve(t, c) })
			start := time.Now()
			c, err := sigverify.Dial(s.dir, sigverify.WithConnectTimeout(300*time.Millisecond))
			if err == nil {
				c.Close()
				t.Fatal("Dial succeeded")
			}
			if !errors.Is(err, sc.want) {
				t.Fatalf("error %v, want %v", err, sc.want)
			}
			if sc.inText != "" && !strings.Contains(err.Error(), sc.inText) {
				t.Fatalf("error %q lacks %q", err, sc.inText)
			}
			if time.Since(start) > 2*time.Second {
				t.Fatalf("Dial took %v", time.Since(start))
			}
			if sc.acked != -1 {
				select {
				case got := <-acks:
					if got != sc.acked {
						t.Fatalf("MappedAck status %d, want %d", got, sc.acked)
					}
				case <-time.After(2 * time.Second):
					t.Fatal("no MappedAck")
				}
			}
		})
	}
	if after := openFDs(t); after != before {
		t.Fatalf("%d descriptors open before the hostile handshakes, %d after", before, after)
	}
}

func unixRights(g *fakeSeg) []byte { return syscall.UnixRights(int(g.f.Fd())) }

// ringScenario runs one lie of a daemon that completed a good handshake.
type ringScenario struct {
	name string
	// serve answers the submissions (g.next) as the lie goes.
	serve func(g *fakeSeg, c *net.UnixConn)
	edit  func(g *fakeSeg) // before the handshake
	ready chan struct{}    // when set, the call waits for serve to close it
	// check looks at the outcome of one batch of 4 rows.
	want     error
	msg      string // in the error's text
	fallback bool
}

func runRing(t *testing.T, sc ringScenario) {
	s := newStandIn(t, func(c *net.UnixConn, hello []byte) {
		g := newFakeSeg(t, 8, 8, 64<<10)
		if sc.edit != nil {
			sc.edit(g)
		}
		if !g.handshake(c) {
			return
		}
		sc.serve(g, c)
	})
	var calls int64
	opts := []sigverify.Option{sigverify.WithConnectTimeout(time.Second)}
	if sc.fallback {
		opts = append(opts, sigverify.WithFallback(func(sigverify.Kind, sigverify.SigEncoding, []byte, []byte, []byte) bool {
			calls++
			return true
		}))
	}
	c, err := sigverify.Dial(s.dir, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if sc.ready != nil {
		<-sc.ready
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	res := []byte{5, 5, 5, 5}
	all, err := c.VerifySchnorrBatch(ctx, make([]byte, 4*32), make([]byte, 4*32), make([]byte, 4*64), res)
	if sc.fallback {
		if err != nil || !all || calls != 4 || string(res) != "\x01\x01\x01\x01" {
			t.Fatalf("with a fallback: all=%v err=%v calls=%d results=%v", all, err, calls, res)
		}
		return
	}
	if !errors.Is(err, sc.want) || all || !strings.Contains(fmt.Sprint(err), sc.msg) {
		t.Fatalf("all=%v err=%v, want %v (%q)", all, err, sc.want, sc.msg)
	}
	for _, v := range res {
		if v != 0 {
			t.Fatalf("results %v after an error: want zeroes", res)
		}
	}
}

// A daemon that serves the rings wrongly.
func TestHostileRings(t *testing.T) {
	answerWith := func(f func(g *fakeSeg, e entry)) func(g *fakeSeg, c *net.UnixConn) {
		return func(g *fakeSeg, c *net.UnixConn) {
			if e, ok := g.next(2 * time.Second); ok {
				f(g, e)
			}
			waitHangup(c) // keep the session open
		}
	}
	ones := func(g *fakeSeg, e entry) {
		for i := range g.results(e) {
			g.results(e)[i] = 1
		}
	}
	truncated := make(chan struct{})
	scenarios := []ringScenario{
		{name: "completion index far ahead", msg: "out-of-range completion", want: sigverify.ErrProtocol, serve: answerWith(func(g *fakeSeg, e entry) {
			g.word(384).store(g.cqTail + 1000)
			g.ring()
		})},
		{name: "completion index behind", msg: "out-of-range completion", want: sigverify.ErrProtocol, serve: answerWith(func(g *fakeSeg, e entry) {
			g.word(384).store(g.cqTail - 1)
			g.ring()
		})},
		{name: "counts lie", msg: "counts disagree", want: sigverify.ErrProtocol, serve: answerWith(func(g *fakeSeg, e entry) {
			ones(g, e)
			g.complete(e.tag, 0, 4, g.epoch, 0)
		})},
		{name: "counts too many", msg: "counts disagree", want: sigverify.ErrProtocol, serve: answerWith(func(g *fakeSeg, e entry) {
			ones(g, e)
			g.complete(e.tag, 4, 1<<63, g.epoch, 0)
		})},
		{name: "verdict byte 2", msg: "neither 0 nor 1", want: sigverify.ErrProtocol, serve: answerWith(func(g *fakeSeg, e entry) {
			ones(g, e)
			g.results(e)[2] = 2
			g.complete(e.tag, 5, 0, g.epoch, 0)
		})},
		{name: "another epoch", msg: "another daemon epoch", want: sigverify.ErrUnavailable, serve: answerWith(func(g *fakeSeg, e entry) {
			ones(g, e)
			g.complete(e.tag, 4, 0, g.epoch+1, 0)
		})},
		{name: "status garbage", want: sigverify.ErrProtocol, serve: answerWith(func(g *fakeSeg, e entry) {
			g.complete(e.tag, 0, 0, g.epoch, 12345)
		})},
		{name: "backend error", want: sigverify.ErrUnavailable, serve: answerWith(func(g *fakeSeg, e entry) {
			g.complete(e.tag, 0, 0, g.epoch, 9)
		})},
		{name: "backend error, fallback", fallback: true, serve: answerWith(func(g *fakeSeg, e entry) {
			g.complete(e.tag, 0, 0, g.epoch, 9)
		})},
		{name: "counts lie, fallback", fallback: true, serve: answerWith(func(g *fakeSeg, e entry) {
			g.complete(e.tag, 4, 0, g.epoch, 0) // says valid, wrote no verdict
		})},
		{name: "submission index ahead", msg: "out-of-range submission", want: sigverify.ErrProtocol, edit: func(g *fakeSeg) {
			g.word(192).store(100)
		}, serve: func(g *fakeSeg, c *net.UnixConn) { waitHangup(c) }},
		{name: "hangs up", msg: "control socket closed", want: sigverify.ErrUnavailable, serve: func(g *fakeSeg, c *net.UnixConn) {
			g.next(2 * time.Second) // the socket closes as the handler returns
		}},
		{name: "state closed", msg: "ended the session", want: sigverify.ErrUnavailable, serve: answerWith(func(g *fakeSeg, e entry) {
			g.word(128).store(3)
			g.ring()
		})},
		{name: "stray packet with a descriptor", msg: "unexpected packet", want: sigverify.ErrProtocol, serve: func(g *fakeSeg, c *net.UnixConn) {
			c.WriteMsgUnix([]byte("hello"), unixRights(g), nil)
			waitHangup(c)
		}},
		{name: "segment truncated", msg: "shrank", want: sigverify.ErrProtocol, ready: truncated, serve: func(g *fakeSeg, c *net.UnixConn) {
			syscall.Munmap(g.mem) // the stand-in never touches it again
			g.mem = nil
			g.f.Truncate(0)
			close(truncated)
			waitHangup(c)
		}},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) { runRing(t, sc) })
	}
}

// waitHangup returns once the client closes the socket (at most 5 s).
func waitHangup(c *net.UnixConn) {
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b := make([]byte, 64)
	for {
		if _, err := c.Read(b); err != nil {
			return
		}
	}
}

// Completions for slots that do not exist, of another generation, or
// answering a cancel nobody sent are ignored; a batch the daemon never
// answers ends with the caller's context, and the daemon is asked to cancel
// it; its late completion frees its slot, and the session goes on.
func TestHostileTagsAndCancel(t *testing.T) {
	cancelled := make(chan bool, 1)
	s := newStandIn(t, func(c *net.UnixConn, hello []byte) {
		g := newFakeSeg(t, 2, 8, 64<<10) // two slots: the late answer must free one
		if !g.handshake(c) {
			return
		}
		e, ok := g.next(2 * time.Second)
		if !ok {
			return
		}
		g.complete(9999, 4, 0, g.epoch, 0)
		g.complete(e.tag+1<<32, 4, 0, g.epoch, 0) // another generation
		g.complete(e.tag|1<<31, 0, 0, g.epoch, 0) // a cancel answer
		x, ok := g.next(2 * time.Second)
		cancelled <- ok && x.opcode == 4 && x.rows == e.tag && x.tag == e.tag|1<<31
		g.complete(x.tag, 0, 0, g.epoch, 20)
		g.complete(e.tag, 0, 0, g.epoch, 8) // cancelled, late
		for i := 0; i < 3; i++ {            // three more batches, answered well
			e, ok = g.next(2 * time.Second)
			if !ok {
				return
			}
			r := g.results(e)
			for j := range r {
				r[j] = byte(j % 2)
			}
			g.complete(e.tag, e.count/2, e.count-e.count/2, g.epoch, 0)
		}
		waitHangup(c)
	})
	c, err := sigverify.Dial(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	z := func(n int) []byte { return make([]byte, n) }
	if _, err := c.VerifySchnorrBatch(ctx, z(4*32), z(4*32), z(4*64), nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("unanswered batch: %v", err)
	}
	if !<-cancelled {
		t.Fatal("no cancel entry for the abandoned batch")
	}
	for i := 0; i < 3; i++ {
		res := z(4)
		all, err := c.VerifySchnorrBatch(context.Background(), z(4*32), z(4*32), z(4*64), res)
		if err != nil || all || string(res) != "\x00\x01\x00\x01" {
			t.Fatalf("batch %d after the cancel: %v %v %v", i, all, err, res)
		}
	}
}

// A daemon that never accepts, its listen backlog full: the connect itself
// ends at the deadline (non-blocking), not when the kernel gives up.
func TestConnectDeadline(t *testing.T) {
	dir := shortTempDir(t)
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: dir + "/sigverifyd.sock"}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	// Fill the backlog: connections nobody accepts.
	for i := 0; i < 4; i++ {
		c, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer syscall.Close(c)
		_ = syscall.Connect(c, &syscall.SockaddrUnix{Name: dir + "/sigverifyd.sock"})
	}
	start := time.Now()
	_, err = sigverify.Dial(dir, sigverify.WithConnectTimeout(300*time.Millisecond))
	took := time.Since(start)
	if !errors.Is(err, sigverify.ErrUnavailable) || took > time.Second || took < 250*time.Millisecond {
		t.Fatalf("Dial: %v after %v, want ErrUnavailable after the 300 ms deadline", err, took)
	}
	t.Log(err)
}

// While one call reconnects to a daemon that does not answer the handshake,
// the other calls are not held up behind it (no lock across the connect):
// they return ErrUnavailable at once, or the fallback's verdicts.
func TestReconnectHoldsNoLock(t *testing.T) {
	var conns int32
	s := newStandIn(t, func(c *net.UnixConn, hello []byte) {
		if atomic.AddInt32(&conns, 1) == 1 {
			g := newFakeSeg(t, 8, 8, 64<<10)
			g.handshake(c) // then hangs up: the session dies
			return
		}
		waitHangup(c) // later connections: never answered
	})
	c, err := sigverify.Dial(s.dir, sigverify.WithConnectTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	z := func(n int) []byte { return make([]byte, n) }
	deadline := time.Now().Add(2 * time.Second)
	for { // until the client saw the session end
		_, err := c.VerifySchnorrBatch(context.Background(), z(32), z(32), z(64), nil)
		if errors.Is(err, sigverify.ErrUnavailable) || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(600 * time.Millisecond) // past the reconnect interval
	slow := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		c.VerifySchnorrBatch(context.Background(), z(32), z(32), z(64), nil) // dials the silent daemon
		slow <- time.Since(start)
	}()
	for atomic.LoadInt32(&conns) < 2 {
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	_, err = c.VerifySchnorrBatch(context.Background(), z(32), z(32), z(64), nil)
	if took := time.Since(start); !errors.Is(err, sigverify.ErrUnavailable) || took > 200*time.Millisecond {
		t.Fatalf("a call during the reconnect: %v after %v", err, took)
	}
	if took := <-slow; took < 900*time.Millisecond {
		t.Fatalf("the reconnecting call returned after %v, before its deadline", took)
	}
}

// A daemon that answers entries without ever consuming them (sq_head stays):
// once the submission ring is full, a call waits for an entry only as long as
// its context lasts.
func TestSubmissionRingNeverConsumed(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	s := newStandIn(t, func(c *net.UnixConn, hello []byte) {
		g := newFakeSeg(t, 2, 8, 64<<10)
		if !g.handshake(c) {
			return
		}
		seen := uint32(0)
		for {
			select {
			case <-stop:
				return
			default:
			}
			tail := g.word(256).load()
			for ; seen != tail; seen++ { // read each entry, leave sq_head where it is
				at := g.sqOff + uint64(seen&(g.sq-1))*64
				tag := binary.LittleEndian.Uint64(g.mem[at:])
				g.complete(tag, 0, 1, g.epoch, 0)
			}
			time.Sleep(100 * time.Microsecond)
		}
	})
	c, err := sigverify.Dial(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	z := func(n int) []byte { return make([]byte, n) }
	for i := 0; i < 2; i++ {
		if all, err := c.VerifySchnorrBatch(context.Background(), z(32), z(32), z(64), z(1)); err != nil || all {
			t.Fatalf("batch %d: %v %v", i, all, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := c.VerifySchnorrBatch(ctx, z(32), z(32), z(64), nil); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > time.Second {
		t.Fatalf("full submission ring: %v after %v", err, time.Since(start))
	}
}
