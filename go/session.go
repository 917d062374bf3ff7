// SPDX-License-Identifier: MIT

package sigverify

// One session with sigverifyd: the mapped segment, its slots and arena
// space, the submission ring, and the reaper goroutine that takes
// completions out of the completion ring.
//
// A batch piece's life: reserve (a slot and a stretch of the arena, handed
// out and freed in allocation order as libsigverify does) -> the caller
// copies its columns in -> submit (one SubmissionEntry, the daemon's bell)
// -> the reaper delivers its completion to the slot -> the caller checks and
// copies the verdicts out -> release. A piece released while in flight is
// abandoned: its slot is freed when its completion comes, never before, as
// the daemon may still write its arena space.
//
// Everything in the mapping is the daemon's to scribble on: indices are
// bounded (an out-of-range one ends the session), completions are matched by
// (slot, generation) and epoch, verdict bytes and counts are checked by the
// caller. The mapping is touched only between enter and leave (a read lock);
// when the session dies (socket closed, state closed, a protocol violation,
// Close) its waiters wake at once, and the mapping is unmapped once the last
// user has left, before the socket is closed (the daemon truncates a
// segment once its client hangs up).

import (
	"net"
	"runtime"
	"runtime/debug"
	"sync"
	"syscall"
	"time"
)

type slotState uint8

const (
	slotFree slotState = iota
	slotReserved
	slotSubmitted
	slotDone
	slotReleased
)

type slot struct {
	state      slotState
	abandoned  bool
	gen        uint32
	begin, end uint64 // virtual arena positions
	base       uint64 // arena offset of the message column
	keyOff     uint64
	sigOff     uint64
	resOff     uint64
	rows       int
	result     completion
	done       chan struct{} // capacity 1: the completion is in
}

type session struct {
	cfg      *config
	conn     *net.UnixConn
	mem      []byte
	hdr      header
	sqes     []byte
	cqes     []byte
	arena    []byte
	arenaLen uint64

	state, sqHead, sqTailW, cqHeadW, cqTailW word
	daemonBell, clientBell                   bell

	sqMu   sync.Mutex // the submission ring
	sqTail uint32
	cqHead uint32       // the reaper's
	cqBuf  []completion // the reaper's

	mu         sync.Mutex // slots and arena space
	slots      []slot
	freeSlots  []uint32
	order      []uint32
	orderHead  int
	orderCount int
	arenaHead  uint64
	arenaTail  uint64
	nextGen    uint32
	inflight   int

	kick      chan struct{} // capacity 1: work for the reaper
	space     chan struct{} // capacity 1: a slot or arena space was freed
	allocTurn chan struct{} // capacity 1: the one caller waiting for space

	dead     chan struct{}
	deadOnce sync.Once
	deadErr  error
	users    sync.RWMutex  // read: touching the mapping; write: unmapping it
	gone     chan struct{} // closed once unmapped and the socket closed
}

// newSession sets up a session over a checked handshake and starts its
// goroutines.
func newSession(cfg *config, d *dialed) *session {
	h := d.hdr
	s := &session{cfg: cfg, conn: d.conn, mem: d.mem, hdr: h, arenaLen: h.arenaLen}
	s.sqes = d.mem[h.sqOffset : h.sqOffset+uint64(h.sqEntries)*sqeSize]
	s.cqes = d.mem[h.cqOffset : h.cqOffset+uint64(h.cqEntries)*cqeSize]
	s.arena = d.mem[h.arenaOffset : h.arenaOffset+h.arenaLen]
	s.state, s.sqHead, s.sqTailW = wordAt(d.mem, hState), wordAt(d.mem, hSqHead), wordAt(d.mem, hSqTail)
	s.cqHeadW, s.cqTailW = wordAt(d.mem, hCqHead), wordAt(d.mem, hCqTail)
	s.daemonBell, s.clientBell = bellAt(d.mem, hDaemonBell), bellAt(d.mem, hClientBell)
	s.sqTail, s.cqHead = d.sqTail, d.cqHead
	s.cqBuf = make([]completion, h.cqEntries)
	k := h.sqEntries
	if h.cqEntries < k {
		k = h.cqEntries
	}
	s.slots = make([]slot, k)
	s.freeSlots = make([]uint32, 0, k)
	s.order = make([]uint32, k)
	for i := int(k) - 1; i >= 0; i-- {
		s.slots[i].done = make(chan struct{}, 1)
		s.freeSlots = append(s.freeSlots, uint32(i))
	}
	s.nextGen = 1
	s.kick = make(chan struct{}, 1)
	s.space = make(chan struct{}, 1)
	s.allocTurn = make(chan struct{}, 1)
	s.dead = make(chan struct{})
	s.gone = make(chan struct{})
	go s.watchSocket()
	go s.reaper()
	return s
}

// kill ends the session with err (the first reason wins) and starts the
// teardown.
func (s *session) kill(err error) {
	s.deadOnce.Do(func() {
		s.deadErr = err
		close(s.dead)
		go s.teardown()
	})
}

func (s *session) isDead() bool {
	select {
	case <-s.dead:
		return true
	default:
		return false
	}
}

// teardown unmaps the segment once nobody touches it, then closes the socket.
func (s *session) teardown() {
	s.users.Lock()
	_ = syscall.Munmap(s.mem)
	s.mem, s.sqes, s.cqes, s.arena = nil, nil, nil, nil
	s.users.Unlock()
	_ = s.conn.Close()
	close(s.gone)
}

// enter admits a user of the mapping; false once the session is dead. It
// touches no shared byte: the caller does, once it is ready for a fault.
func (s *session) enter() bool {
	s.users.RLock()
	if s.isDead() {
		s.users.RUnlock()
		return false
	}
	return true
}

// ended tells (and acts on) a daemon that marked the session closed.
func (s *session) ended() bool {
	if s.state.load() == stateClosed {
		s.kill(errSessionEnded)
		return true
	}
	return false
}

func (s *session) leave() { s.users.RUnlock() }

// watchSocket ends the session when the control socket closes. The daemon
// sends nothing after the handshake: a packet is a protocol violation (and
// any descriptor in it is closed).
func (s *session) watchSocket() {
	buf := make([]byte, 512)
	oob := make([]byte, syscall.CmsgSpace(8*4))
	n, oobn, _, _, err := s.conn.ReadMsgUnix(buf, oob)
	if oobn > 0 {
		if msgs, perr := syscall.ParseSocketControlMessage(oob[:oobn]); perr == nil {
			for i := range msgs {
				fds, _ := syscall.ParseUnixRights(&msgs[i])
				for _, f := range fds {
					_ = syscall.Close(f)
				}
			}
		}
	}
	if err == nil && n > 0 {
		s.kill(errUnexpectedPacket)
		return
	}
	s.kill(errSocketClosed)
}

// isMemoryFault tells a fault in the mapping (debug.SetPanicOnFault) from
// any other panic.
func isMemoryFault(r interface{}) bool {
	re, ok := r.(runtime.Error)
	if !ok {
		return false
	}
	_, addr := re.(interface{ Addr() uintptr })
	return addr
}

func setPanicOnFault() func() {
	old := debug.SetPanicOnFault(true)
	return func() { debug.SetPanicOnFault(old) }
}

// reaper takes completions out of the ring while pieces are in flight:
// polls, then sleeps on the client bell (at most the liveness interval),
// checking between sleeps that the daemon has not ended the session.
func (s *session) reaper() {
	defer func() {
		if r := recover(); r != nil {
			if !isMemoryFault(r) {
				panic(r)
			}
			s.users.RUnlock()
			s.kill(errSegmentFault)
		}
	}()
	debug.SetPanicOnFault(true)
	for {
		select {
		case <-s.kick:
		case <-s.dead:
			return
		}
		if !s.enter() {
			return
		}
		for {
			seq := s.clientBell.seq.load()
			got := s.reap()
			s.mu.Lock()
			busy := s.inflight > 0
			s.mu.Unlock()
			if !busy || s.isDead() {
				break
			}
			if got {
				continue
			}
			if s.state.load() == stateClosed {
				s.kill(errSessionEnded)
				break
			}
			s.clientBell.sleep(seq, s.cfg.liveness)
		}
		s.leave()
	}
}

// reap copies the completions published so far out of the ring, frees their
// entries and hands them to their slots. Returns whether there were any.
func (s *session) reap() bool {
	tail := s.cqTailW.load()
	entries := s.hdr.cqEntries
	if !ringCountOK(s.cqHead, tail, entries) {
		s.kill(errCqIndex)
		return false
	}
	n := int(tail - s.cqHead)
	if n == 0 {
		return false
	}
	for i := 0; i < n; i++ {
		at := uint64(s.cqHead&(entries-1)) * cqeSize
		s.cqBuf[i] = getCompletion(s.cqes[at : at+cqeSize])
		s.cqHead++
	}
	s.cqHeadW.store(s.cqHead)
	s.daemonBell.ring() // completion ring space freed
	s.mu.Lock()
	for i := 0; i < n; i++ {
		s.deliverLocked(&s.cqBuf[i])
	}
	s.mu.Unlock()
	return true
}

func (s *session) deliverLocked(c *completion) {
	if c.userTag&cancelTagBit != 0 {
		return // the answer to a cancel entry: the batch's own completion follows
	}
	idx := uint32(c.userTag & (cancelTagBit - 1))
	gen := uint32(c.userTag >> 32)
	if idx >= uint32(len(s.slots)) {
		return
	}
	sl := &s.slots[idx]
	if sl.gen != gen || sl.state != slotSubmitted {
		return // a stale or made-up tag: never applied
	}
	sl.state = slotDone
	sl.result = *c
	s.inflight--
	if sl.abandoned {
		s.freeSlotLocked(idx)
		return
	}
	select {
	case sl.done <- struct{}{}:
	default:
	}
}

func (p piece) tag() uint64 { return uint64(p.gen)<<32 | uint64(p.idx) }

// submit publishes a verify_columns entry for a reserved piece (waiting for
// a ring entry at most until done ends).
func (s *session) submit(done <-chan struct{}, p piece, kind Kind, enc SigEncoding) error {
	s.mu.Lock()
	sl := &s.slots[p.idx]
	e := submission{
		userTag: p.tag(), rowsOffset: sl.base, resultsOffset: sl.resOff, rowCount: uint64(p.rows),
		opcode: opVerifyColumns, recordKind: uint8(kind), encoding: uint8(enc), table: tableOf(kind),
		keyOffset: sl.keyOff, signatureOffset: sl.sigOff,
	}
	s.mu.Unlock()
	return s.publish(done, &e, p)
}

func tableOf(kind Kind) uint8 {
	if kind == Schnorr {
		return tableSchnorr
	}
	return tableECDSA
}

// publish writes one entry into the submission ring (waiting for a free
// entry while the daemon lags) and rings the daemon. A verify entry's slot
// is marked submitted first, so its completion can never come too early.
func (s *session) publish(done <-chan struct{}, e *submission, p piece) error {
	s.sqMu.Lock()
	defer s.sqMu.Unlock()
	if s.state.load() != stateReady {
		return statusErr(StatusShuttingDown)
	}
	entries := s.hdr.sqEntries
	for {
		seq := s.clientBell.seq.load()
		head := s.sqHead.load()
		if !ringCountOK(head, s.sqTail, entries) {
			s.kill(errSqIndex)
			return errSqIndex
		}
		if s.sqTail-head < entries {
			break
		}
		select {
		case <-s.dead:
			return s.deadErr
		case <-done:
			return errCtxDone
		default:
		}
		s.clientBell.sleep(seq, s.cfg.liveness)
	}
	if e.opcode != opCancel {
		s.mu.Lock()
		s.slots[p.idx].state = slotSubmitted
		s.inflight++
		s.mu.Unlock()
	}
	at := uint64(s.sqTail&(entries-1)) * sqeSize
	e.put(s.sqes[at : at+sqeSize])
	s.sqTail++
	s.sqTailW.store(s.sqTail)
	s.daemonBell.ring()
	select {
	case s.kick <- struct{}{}:
	default:
	}
	return nil
}

// cancel asks the daemon to drop the piece's rows not yet taken (ABI 1.3);
// best effort, never waiting for a ring entry.
func (s *session) cancel(p piece) {
	if s.hdr.abiMinor < abiMinorCancel {
		return
	}
	e := submission{userTag: p.tag() | cancelTagBit, opcode: opCancel, rowsOffset: p.tag()}
	_ = s.publish(closedChan, &e, p) // never waits for a ring entry
}

var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// wait blocks until the piece's completion, the end of done or the session.
func (s *session) wait(done <-chan struct{}, p piece) (completion, error) {
	select {
	case <-s.slots[p.idx].done:
	case <-done:
		return completion{}, errCtxDone
	case <-s.dead:
		return completion{}, s.deadErr
	}
	s.mu.Lock()
	sl := &s.slots[p.idx]
	r := sl.result
	ok := sl.gen == p.gen && sl.state == slotDone
	s.mu.Unlock()
	if !ok {
		return completion{}, errProtocolState
	}
	return r, nil
}

// release gives the piece's slot back (abandons it while in flight).
func (s *session) release(p piece) {
	s.mu.Lock()
	sl := &s.slots[p.idx]
	if sl.gen == p.gen {
		if sl.state == slotSubmitted {
			sl.abandoned = true
		} else if sl.state == slotReserved || sl.state == slotDone {
			s.freeSlotLocked(p.idx)
		}
	}
	s.mu.Unlock()
}

// results is the arena stretch of a piece's verdict bytes.
func (s *session) results(p piece) []byte {
	s.mu.Lock()
	off := s.slots[p.idx].resOff
	s.mu.Unlock()
	return s.arena[off : off+uint64(p.rows)]
}

// close ends the session (Client.Close) and waits until it is unmapped.
func (s *session) close(why error) {
	s.kill(why)
	select {
	case <-s.gone:
	case <-time.After(10 * time.Second):
	}
}
