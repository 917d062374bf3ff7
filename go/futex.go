// SPDX-License-Identifier: MIT

package sigverify

// Words of the shared segment and its doorbells (docs/protocol.md §4):
// shared futexes (no FUTEX_PRIVATE_FLAG: the daemon is another process),
// every wait bounded by a timeout, so a dead or lying daemon can delay a
// waiter by at most that long.

import (
	"runtime"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

const (
	futexWait = 0
	futexWake = 1
	// How long a waiter polls before it sleeps on the futex (as the C++
	// client: shm_protocol/spin_wait.hpp), yielding every 64 polls.
	spinBeforeSleep = 100 * time.Microsecond
)

// word is a 32-bit word of the mapping, accessed atomically only.
type word struct{ p *uint32 }

func wordAt(mem []byte, off int) word {
	_ = mem[off+3]
	return word{(*uint32)(unsafe.Pointer(&mem[off]))}
}

func (w word) load() uint32   { return atomic.LoadUint32(w.p) }
func (w word) store(v uint32) { atomic.StoreUint32(w.p, v) }
func (w word) add(d uint32)   { atomic.AddUint32(w.p, d) }

// bell is a Doorbell: seq, then waiters.
type bell struct{ seq, waiters word }

func bellAt(mem []byte, off int) bell { return bell{wordAt(mem, off), wordAt(mem, off+4)} }

// ring bumps seq and wakes the other side only when it announced a waiter.
func (b bell) ring() {
	b.seq.add(1)
	if b.waiters.load() != 0 {
		_, _, _ = syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(b.seq.p)), futexWake,
			uintptr(1<<31-1), 0, 0, 0)
	}
}

// sleep waits until seq moves off observed, at most d: a bounded poll, then
// FUTEX_WAIT announced in waiters. Returns whether seq moved.
func (b bell) sleep(observed uint32, d time.Duration) bool {
	until := time.Now().Add(spinBeforeSleep)
	if spinBeforeSleep > d {
		until = time.Now().Add(d)
	}
	for i := 1; ; i++ {
		if b.seq.load() != observed {
			return true
		}
		if i%64 == 0 {
			if !time.Now().Before(until) {
				break
			}
			runtime.Gosched()
		}
	}
	d -= spinBeforeSleep
	if d <= 0 {
		return false
	}
	ts := syscall.NsecToTimespec(int64(d))
	b.waiters.add(1)
	_, _, _ = syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(b.seq.p)), futexWait,
		uintptr(observed), uintptr(unsafe.Pointer(&ts)), 0, 0)
	b.waiters.add(^uint32(0))
	return b.seq.load() != observed
}
