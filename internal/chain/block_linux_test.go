package chain

import (
	"syscall"
	"time"
)

// blockFor blocks the calling thread in nanosleep(2) for d. It first sets
// the thread's timer slack to 1 µs: at the default 50 µs a 140 µs sleep
// lasts about 195 µs here.
func blockFor(d time.Duration) {
	const prSetTimerslack = 29
	syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerslack, 1000, 0)
	ts := syscall.NsecToTimespec(d.Nanoseconds())
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
}
