package proxy

import "sync"

// readBufferSize is the size of the relay's read buffers. A message that
// fits is handed on without a copy.
const readBufferSize = 64 << 10

// A readBuf is one buffer of a bufPool.
type readBuf struct{ b []byte }

// A bufPool holds read buffers of one size, shared by every relay of the
// process. A reader takes one when there is something to read and gives
// it back once it has handed on all it read, so that an idle session
// holds none (aegis serve holds thousands of idle sessions).
type bufPool struct {
	size int
	pool sync.Pool
}

// readBuffers are the relay's read buffers.
var readBuffers = &bufPool{size: readBufferSize}

func (p *bufPool) get() *readBuf {
	if rb, ok := p.pool.Get().(*readBuf); ok {
		return rb
	}
	return &readBuf{b: make([]byte, p.size)}
}

// put gives rb back. Nothing may read or write rb after.
func (p *bufPool) put(rb *readBuf) {
	if poisonReadBuffers {
		for i := range rb.b {
			rb.b[i] = poison
		}
	}
	p.pool.Put(rb)
}

// poisonReadBuffers makes put overwrite what a buffer held, so that a
// test sees a line used after its buffer went back; set by tests.
var poisonReadBuffers = false

const poison = '#'

// An idleReader is an input that can be waited for without a buffer:
// readIdle takes one only once there is something to read.
type idleReader interface {
	// readIdle reads into rb, whose contents are no longer needed, or
	// into a buffer taken from pool once there is something to read if rb
	// is nil; rb goes back to pool while the input is waited for. It
	// returns the buffer read into and how much it read, or, with an
	// error (io.EOF at the end of the input), no buffer: what it held
	// went back to pool.
	readIdle(pool *bufPool, rb *readBuf) (*readBuf, int, error)
}

// copyIdle is copyFrom for an input that can be waited for without a
// buffer: one of the relay's read buffers is held only while there is
// something to copy.
func (t *tee) copyIdle(r idleReader) {
	var rb *readBuf
	for {
		var n int
		var err error
		if rb, n, err = r.readIdle(readBuffers, rb); err != nil {
			return
		}
		t.Write(rb.b[:n])
	}
}
