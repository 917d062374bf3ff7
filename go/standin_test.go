// SPDX-License-Identifier: MIT

package sigverify_test

// A hostile sigverifyd stand-in: it speaks the ring ABI from its own
// reading of docs/protocol.md (none of the package's code), and then lies
// in whatever way a test asks for.

import (
	"encoding/binary"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

var (
	segMu    sync.Mutex
	openSegs []*os.File
)

type standIn struct {
	t    *testing.T
	dir  string
	ln   *net.UnixListener
	done chan struct{}
}

// newStandIn listens in a fresh runtime directory and runs handler for each
// connection, after reading its HelloRequest.
func newStandIn(t *testing.T, handler func(c *net.UnixConn, hello []byte)) *standIn {
	dir := shortTempDir(t)
	ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: filepath.Join(dir, "sigverifyd.sock"), Net: "unixpacket"})
	if err != nil {
		t.Fatal(err)
	}
	s := &standIn{t: t, dir: dir, ln: ln, done: make(chan struct{})}
	var handlers sync.WaitGroup
	go func() {
		defer close(s.done)
		for {
			c, err := ln.AcceptUnix()
			if err != nil {
				return
			}
			handlers.Add(1)
			go func() {
				defer handlers.Done()
				defer c.Close()
				hello := make([]byte, 200)
				n, _ := c.Read(hello)
				handler(c, hello[:n])
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-s.done
		handlers.Wait()
		segMu.Lock()
		for _, f := range openSegs {
			f.Close()
		}
		openSegs = nil
		segMu.Unlock()
	})
	return s
}

// fakeSeg is a segment as a daemon makes it: a file, mapped, its header
// written, state ready last.
type fakeSeg struct {
	t              *testing.T
	f              *os.File
	mem            []byte
	sq, cq         uint32
	sqOff, cqOff   uint64
	arenaOff       uint64
	arena          uint64
	size           uint64
	epoch          uint64
	sqHead, cqTail uint32
}

func newFakeSeg(t *testing.T, sq, cq uint32, arena uint64) *fakeSeg {
	g := &fakeSeg{t: t, sq: sq, cq: cq, arena: arena, epoch: 0x5eed5eed}
	g.sqOff = 4096
	g.cqOff = g.sqOff + uint64(sq)*64
	g.arenaOff = (g.cqOff + uint64(cq)*64 + 4095) / 4096 * 4096
	g.size = g.arenaOff + arena
	f, err := os.CreateTemp(t.TempDir(), "seg")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(int64(g.size)); err != nil {
		t.Fatal(err)
	}
	g.f = f
	g.mem, err = syscall.Mmap(int(f.Fd()), 0, int(g.size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	m := g.mem
	le.PutUint32(m[0:], 0x47535653)
	le.PutUint16(m[4:], 1)
	le.PutUint16(m[6:], 6)
	le.PutUint32(m[8:], 4096)
	le.PutUint32(m[12:], uint32(os.Getpid()))
	le.PutUint64(m[16:], g.size)
	le.PutUint64(m[24:], g.epoch)
	le.PutUint64(m[32:], 1)
	le.PutUint32(m[48:], sq)
	le.PutUint32(m[52:], cq)
	le.PutUint32(m[56:], 64)
	le.PutUint32(m[60:], 64)
	le.PutUint64(m[64:], g.sqOff)
	le.PutUint64(m[72:], g.cqOff)
	le.PutUint64(m[80:], g.arenaOff)
	le.PutUint64(m[88:], arena)
	le.PutUint32(m[96:], sq-1)
	le.PutUint32(m[100:], cq-1)
	g.word(128).store(1) // ready
	// Closed by the stand-in once its handlers are done; never unmapped (a
	// handler may still run when a failed test ends).
	segMu.Lock()
	openSegs = append(openSegs, f)
	segMu.Unlock()
	return g
}

type sword struct{ p *uint32 }

func (w sword) load() uint32   { return atomic.LoadUint32(w.p) }
func (w sword) store(v uint32) { atomic.StoreUint32(w.p, v) }

func (g *fakeSeg) word(off int) sword { return sword{(*uint32)(unsafe.Pointer(&g.mem[off]))} }

// reply sends a HelloReply (status, error text) with the segment's
// descriptor when pass is set; extra descriptors go along too.
func (g *fakeSeg) reply(c *net.UnixConn, status uint32, text string, pass bool, extra ...int) {
	r := helloReply(status, text, g.size, g.epoch)
	var fds []int
	if pass {
		fds = append(fds, int(g.f.Fd()))
	}
	fds = append(fds, extra...)
	var oob []byte
	if len(fds) > 0 {
		oob = syscall.UnixRights(fds...)
	}
	if _, _, err := c.WriteMsgUnix(r, oob, nil); err != nil {
		g.t.Logf("stand-in reply: %v", err)
	}
}

func helloReply(status uint32, text string, size, epoch uint64) []byte {
	r := make([]byte, 240)
	le := binary.LittleEndian
	le.PutUint32(r[0:], 0x52485653)
	le.PutUint32(r[4:], 1)
	le.PutUint32(r[8:], status)
	le.PutUint64(r[16:], size)
	le.PutUint64(r[24:], epoch)
	le.PutUint64(r[32:], 1)
	copy(r[40:], text)
	return r
}

// ack reads the client's MappedAck: its status, or -1.
func ack(c *net.UnixConn) int {
	b := make([]byte, 16)
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	n, err := c.Read(b)
	_ = c.SetReadDeadline(time.Time{})
	if err != nil || n != 8 || binary.LittleEndian.Uint32(b) != 0x4B415653 {
		return -1
	}
	return int(binary.LittleEndian.Uint32(b[4:]))
}

// handshake is a good daemon's handshake; false when the client refused.
func (g *fakeSeg) handshake(c *net.UnixConn) bool {
	g.reply(c, 0, "", true)
	return ack(c) == 0
}

// entry is a SubmissionEntry as the stand-in reads it.
type entry struct {
	tag, rows, results, count uint64
	opcode, kind, encoding    uint8
	key, sig                  uint64
}

// next waits (at most d) for the client's next submission.
func (g *fakeSeg) next(d time.Duration) (entry, bool) {
	until := time.Now().Add(d)
	for g.word(256).load() == g.sqHead {
		if time.Now().After(until) {
			return entry{}, false
		}
		time.Sleep(50 * time.Microsecond)
	}
	at := g.sqOff + uint64(g.sqHead&(g.sq-1))*64
	p := g.mem[at : at+64]
	le := binary.LittleEndian
	e := entry{tag: le.Uint64(p[0:]), rows: le.Uint64(p[8:]), results: le.Uint64(p[16:]), count: le.Uint64(p[24:]),
		opcode: p[32], kind: p[33], encoding: p[35], key: le.Uint64(p[40:]), sig: le.Uint64(p[48:])}
	g.sqHead++
	g.word(192).store(g.sqHead)
	return e, true
}

// results is the arena stretch of an entry's verdict bytes (bounded: the
// client under test is the one that might lie here).
func (g *fakeSeg) results(e entry) []byte {
	if e.results+e.count > g.arena {
		g.t.Fatalf("client named results outside the arena")
	}
	return g.mem[g.arenaOff+e.results : g.arenaOff+e.results+e.count]
}

// complete posts a completion and rings the client's bell.
func (g *fakeSeg) complete(tag, valid, invalid, epoch uint64, status uint32) {
	at := g.cqOff + uint64(g.cqTail&(g.cq-1))*64
	p := g.mem[at : at+64]
	le := binary.LittleEndian
	le.PutUint64(p[0:], tag)
	le.PutUint64(p[8:], valid)
	le.PutUint64(p[16:], invalid)
	le.PutUint64(p[24:], epoch)
	le.PutUint32(p[32:], status)
	g.cqTail++
	g.word(384).store(g.cqTail)
	g.ring()
}

func (g *fakeSeg) ring() {
	seq := g.word(512)
	atomic.AddUint32(seq.p, 1)
	_, _, _ = syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(seq.p)), 1, 1<<30, 0, 0, 0)
}

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(ents)
}
