//go:build !linux

package chain

import "time"

// blockFor waits for d; elsewhere than Linux, on the runtime's timers.
func blockFor(d time.Duration) { time.Sleep(d) }
