// SPDX-License-Identifier: MIT

package sigverify

// A session's slots and arena space (as libsigverify's ring.cpp hands them
// out): a piece takes one slot and one contiguous stretch of the arena, in
// allocation order (a ring of virtual positions arenaHead..arenaTail), and
// space is freed in that order, so a released slot returns its stretch once
// every older one is released. Slots never outnumber the submission ring.
// Guarded by session.mu.

func (s *session) freeSlotLocked(idx uint32) {
	sl := &s.slots[idx]
	sl.state = slotReleased
	sl.abandoned = false
	for s.orderCount != 0 {
		front := s.order[s.orderHead]
		f := &s.slots[front]
		if f.state != slotReleased {
			break
		}
		s.arenaHead = f.end
		f.state = slotFree
		s.freeSlots = append(s.freeSlots, front)
		s.orderHead = (s.orderHead + 1) % len(s.order)
		s.orderCount--
	}
	if s.orderCount == 0 {
		s.arenaHead, s.arenaTail = 0, 0
	}
	select {
	case s.space <- struct{}{}:
	default:
	}
}

// tryAllocLocked takes a slot and bytes (a multiple of arenaAlign)
// contiguous arena bytes, padding to the arena's end to wrap.
func (s *session) tryAllocLocked(bytes uint64) (uint32, bool) {
	if len(s.freeSlots) == 0 {
		return 0, false
	}
	a := s.arenaLen
	start := s.arenaTail
	if off := start % a; bytes != 0 && off+bytes > a {
		start += a - off
	}
	if start+bytes-s.arenaHead > a {
		return 0, false
	}
	idx := s.freeSlots[len(s.freeSlots)-1]
	s.freeSlots = s.freeSlots[:len(s.freeSlots)-1]
	sl := &s.slots[idx]
	sl.state = slotReserved
	sl.abandoned = false
	sl.gen = s.nextGen
	if s.nextGen++; s.nextGen == 0 {
		s.nextGen = 1
	}
	sl.begin, sl.end = s.arenaTail, start+bytes
	sl.base = start % a
	s.arenaTail = sl.end
	s.order[(s.orderHead+s.orderCount)%len(s.order)] = idx
	s.orderCount++
	select { // a token a caller who gave up waiting left behind
	case <-sl.done:
	default:
	}
	return idx, true
}

// maxPieceRows is the most rows of kind one piece may take: a quarter of
// the arena (so pieces of several callers pipeline), at most 32,768 rows.
func (s *session) maxPieceRows(kind Kind) int {
	perRow := uint64(messageWidth + keyWidth(kind) + signatureWidth + 1)
	quarter := s.arenaLen / 4
	if quarter <= 5*arenaAlign {
		return 1
	}
	n := (quarter - 5*arenaAlign) / perRow
	if n > 32768 {
		n = 32768
	}
	if n < 1 {
		n = 1
	}
	return int(n)
}

func keyWidth(kind Kind) int {
	if kind == Schnorr {
		return schnorrKeyWidth
	}
	return ecdsaKeyWidth
}

// A piece of a batch in flight: its slot, generation and rows.
type piece struct {
	idx, gen uint32
	begin    int
	rows     int
}

// reserve takes a slot and arena space for rows of kind. With wait it
// waits for space (ctx, the session's death); without, errNoSpace.
func (s *session) reserve(done <-chan struct{}, kind Kind, rows int, wait bool) (piece, error) {
	n := uint64(rows)
	kw := uint64(keyWidth(kind))
	keyOff := alignUp(n*messageWidth, arenaAlign)
	sigOff := keyOff + alignUp(n*kw, arenaAlign)
	resOff := sigOff + alignUp(n*signatureWidth, arenaAlign)
	total := resOff + alignUp(n, arenaAlign)
	turn := false
	defer func() {
		if turn {
			<-s.allocTurn
		}
	}()
	for {
		s.mu.Lock()
		idx, ok := s.tryAllocLocked(total)
		if ok {
			sl := &s.slots[idx]
			sl.keyOff, sl.sigOff, sl.resOff = sl.base+keyOff, sl.base+sigOff, sl.base+resOff
			sl.rows = rows
			gen := sl.gen
			s.mu.Unlock()
			return piece{idx: idx, gen: gen, rows: rows}, nil
		}
		s.mu.Unlock()
		if !wait {
			return piece{}, errNoSpace
		}
		if !turn {
			select {
			case s.allocTurn <- struct{}{}:
				turn = true
				continue
			case <-done:
				return piece{}, errCtxDone
			case <-s.dead:
				return piece{}, s.deadErr
			}
		}
		select {
		case <-s.space:
		case <-done:
			return piece{}, errCtxDone
		case <-s.dead:
			return piece{}, s.deadErr
		}
	}
}

// columns returns the arena stretches of a reserved piece.
func (s *session) columns(p piece, kind Kind) (msg, key, sig []byte) {
	s.mu.Lock()
	sl := &s.slots[p.idx]
	base, k, g := sl.base, sl.keyOff, sl.sigOff
	s.mu.Unlock()
	n := uint64(p.rows)
	return s.arena[base : base+n*messageWidth], s.arena[k : k+n*uint64(keyWidth(kind))],
		s.arena[g : g+n*signatureWidth]
}
