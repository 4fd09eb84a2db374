package proxy

import "sync"

// A handoff passes the client's input from the goroutine that read a
// tools/call to a standby reader without waking it.
//
// The goroutine that reads a call decides it itself (see readClient), so the
// client's later messages need another reader while the call is decided. A
// reader woken through a channel costs a wake-up between threads on the
// call's path (the runtime starts another thread for it), on every call. The
// standby reader instead waits in the poller for a bell (an eventfd), and
// ringing it wakes no one: the poller notices the bell as soon as the
// deciding goroutine blocks (a durable append, an approval) or finishes, or
// another thread looks for work. If the call was decided and forwarded
// before anyone noticed, the deciding goroutine takes the input back,
// silences the bell, and reads on; the standby keeps waiting. So a call
// decided without blocking costs no wake-up at all, and a gate that blocks
// does not hold up the client's later messages.
//
// Without a bell (other systems), there is never a standby and readers hand
// the input over through relay.idle.
type handoff struct {
	mu      sync.Mutex
	bell    *bell
	standby bool     // a goroutine waits for the bell
	next    *reading // passed to the standby and not taken yet
	closed  bool
}

// open gives h its bell, if this system has one.
func (h *handoff) open() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed {
		h.bell = newBell()
	}
}

// pass leaves in for the standby reader and rings the bell. It returns
// false when there is no standby free to take it.
func (h *handoff) pass(in *reading) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.bell == nil || h.closed || !h.standby || h.next != nil {
		return false
	}
	if !h.bell.ring() {
		return false
	}
	h.next = in
	return true
}

// reclaim takes in back if the standby has not taken it, silencing the
// bell so that the standby does not wake for nothing, and reports whether
// it did.
func (h *handoff) reclaim(in *reading) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.next != in || h.closed {
		return false
	}
	h.next = nil
	h.bell.silence()
	return true
}

// wait makes the calling goroutine the standby reader and returns the input
// once it is passed. It returns nil at once if there is a standby already
// (or no bell), and nil when h is closed.
func (h *handoff) wait() *reading {
	h.mu.Lock()
	if h.bell == nil || h.closed || h.standby {
		h.mu.Unlock()
		return nil
	}
	h.standby = true
	h.mu.Unlock()
	for {
		ok := h.bell.wait()
		h.mu.Lock()
		in := h.next
		if in != nil || !ok || h.closed {
			h.next, h.standby = nil, false
			if !ok && !h.closed {
				// The bell failed: readers hand over through
				// relay.idle from now on.
				h.closed = true
				h.bell.close()
			}
			h.mu.Unlock()
			return in
		}
		h.mu.Unlock() // the bell rang for an input taken back
	}
}

// close ends the standby's wait and frees the bell; later passes fail.
func (h *handoff) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.closed = true
	if h.bell != nil {
		h.bell.close()
	}
}
