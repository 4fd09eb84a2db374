package chain

import (
	"syscall"
	"time"
)

// blockFor blocks the calling thread in nanosleep(2) for d. It first sets
// the thread's timer slack to 1 µs: at the default 50 µs a 140 µs sleep
// lasts about 195 µs here. The goroutine is not locked to its thread, as
// a real fsync's is not (in one trial, during other load, locking it
// made each simulated fsync about 40 µs longer); nothing between the two
// calls lets it move, short of an asynchronous preemption, which would only
// lengthen one sleep.
func blockFor(d time.Duration) {
	const prSetTimerslack = 29
	syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerslack, 1000, 0)
	ts := syscall.NsecToTimespec(d.Nanoseconds())
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
}
