package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/aegis-mcp/aegis/internal/args"
)

// A lineReader reads the newline-delimited messages of MCP's stdio
// transport, each at most max bytes, without ever buffering more than that.
//
// Its read buffer comes from a pool (readBuffers) when there is something
// to read, and goes back once all it held has been handed on and the input
// is waited for: an idle input holds no buffer when it can be waited for
// without one (an idleReader); any other input holds its buffer.
//
// From a MessageReader it reads the messages themselves, with no buffer.
type lineReader struct {
	src  io.Reader
	idle idleReader    // src, if it can be waited for without a buffer
	msgs MessageReader // src, if it hands over whole messages
	pool *bufPool
	max  int

	rb   *readBuf // the read buffer, nil while none is held
	buf  []byte   // rb.b, or the message read (msgs)
	r, w int      // buf[r:w] is read and not handed on yet
	err  error    // what ended the input, once buf[r:w] is handed on
	acc  []byte   // a line longer than the read buffer
}

// A tooLongError reports a message over the cap. The message has been read
// and discarded; ID is its top-level id, raw, if one could be found.
type tooLongError struct {
	Max int
	ID  []byte
}

// asTooLong returns err as a *tooLongError, or nil. Only an error costs an
// allocation (errors.As takes the address of the result).
func asTooLong(err error) *tooLongError {
	if err == nil {
		return nil
	}
	var tooLong *tooLongError
	if errors.As(err, &tooLong) {
		return tooLong
	}
	return nil
}

func (e *tooLongError) Error() string {
	return fmt.Sprintf("message exceeds the %d-byte limit", e.Max)
}

func newLineReader(r io.Reader, max int) *lineReader {
	l := &lineReader{src: r, pool: readBuffers, max: max}
	l.idle, _ = r.(idleReader)
	l.msgs, _ = r.(MessageReader)
	return l
}

// A MessageReader hands the relay the client's messages one at a time,
// as a transport that receives them separately has them (aegis serve,
// one per HTTP request). [Run] reads stdin through it when stdin
// implements it: the relay then holds no read buffer, and a message is
// handed on without a copy.
type MessageReader interface {
	// ReadMessage returns the client's next message, or an error (io.EOF
	// at the end of the input). MCP's stdio framing applies to the
	// messages as to the stream they would make one after the other: a
	// message is one line, ending with a newline (one without continues
	// in the next), and one that holds newlines is that many messages.
	// The relay does not change a message, nor use it after its next
	// call of ReadMessage; until then the reader must not change it.
	ReadMessage() ([]byte, error)
}

// errBufferFull is readSlice's error for a line that does not fit the
// read buffer.
var errBufferFull = errors.New("proxy: line longer than the read buffer")

// next returns the next non-blank line, including its newline (one is
// appended to a last line that has none). The slice is valid until the next
// call. At the end of the input it returns io.EOF.
func (l *lineReader) next() ([]byte, error) {
	// The last line is no longer needed: a long one's copy is not kept
	// for the next (an idle session would hold the largest message it
	// ever had).
	l.acc = nil
	for {
		line, err := l.readSlice()
		switch {
		case err == nil:
		case errors.Is(err, errBufferFull):
			line, err = l.long(line)
			if err != nil {
				if asTooLong(err) == nil {
					l.release()
				}
				return nil, err
			}
		case errors.Is(err, io.EOF) && len(line) > 0:
			l.acc = append(append(l.acc[:0], line...), '\n')
			line = l.acc
		default:
			l.release()
			return nil, err
		}
		if len(line)-1 > l.max {
			var s idScanner
			s.feed(line)
			return nil, &tooLongError{Max: l.max, ID: s.id()}
		}
		if !blank(line) {
			return line, nil
		}
	}
}

// readSlice is bufio.Reader.ReadSlice('\n') on the pooled buffer: the
// next line, including its newline, or, with errBufferFull, as much of it
// as the buffer (or the message, from a MessageReader) holds, or, with
// the error that ended the input, what was left of it. The slice is valid
// until the next read.
func (l *lineReader) readSlice() ([]byte, error) {
	searched := 0
	for {
		if i := bytes.IndexByte(l.buf[l.r+searched:l.w], '\n'); i >= 0 {
			line := l.buf[l.r : l.r+searched+i+1]
			l.r += searched + i + 1
			return line, nil
		}
		if l.err != nil {
			line := l.buf[l.r:l.w]
			l.r = l.w
			return line, l.err
		}
		if l.w > l.r && (l.w-l.r == len(l.buf) || l.msgs != nil) {
			line := l.buf[l.r:l.w]
			l.r = l.w
			return line, errBufferFull
		}
		searched = l.w - l.r
		l.fill()
	}
}

// fill reads more into the buffer, or sets l.err. What was handed on
// before (buf[:r]) is no longer needed.
func (l *lineReader) fill() {
	if l.msgs != nil {
		// The message read before is handed on whole (readSlice).
		msg, err := l.msgs.ReadMessage()
		l.buf, l.r, l.w, l.err = msg, 0, len(msg), err
		return
	}
	if l.r == l.w {
		l.r, l.w = 0, 0
	} else if l.r > 0 {
		copy(l.buf, l.buf[l.r:l.w])
		l.w -= l.r
		l.r = 0
	}
	if l.w == 0 && l.idle != nil {
		// Nothing held: the buffer goes back while the input is waited
		// for.
		rb, n, err := l.idle.readIdle(l.pool, l.rb)
		l.hold(rb)
		l.w, l.err = n, err
		return
	}
	if l.rb == nil {
		l.hold(l.pool.get())
	}
	for range 100 {
		n, err := l.src.Read(l.buf[l.w:])
		if n < 0 || n > len(l.buf)-l.w {
			panic("proxy: invalid count from Read")
		}
		l.w += n
		if err != nil {
			l.err = err
			return
		}
		if n > 0 {
			return
		}
	}
	l.err = io.ErrNoProgress
}

// hold makes rb, which may be nil, the read buffer.
func (l *lineReader) hold(rb *readBuf) {
	l.rb, l.buf = rb, nil
	if rb != nil {
		l.buf = rb.b
	}
}

// release gives the read buffer back if it holds nothing still to be read.
func (l *lineReader) release() {
	if l.rb != nil && l.r == l.w {
		l.pool.put(l.rb)
		l.hold(nil)
		l.r, l.w = 0, 0
	}
}

// long accumulates a line that did not fit the read buffer, first being its
// start.
func (l *lineReader) long(first []byte) ([]byte, error) {
	l.acc = append(l.acc[:0], first...)
	for {
		if len(l.acc) > l.max+1 {
			return nil, l.discard()
		}
		chunk, err := l.readSlice()
		l.acc = append(l.acc, chunk...)
		switch {
		case err == nil:
			return l.acc, nil
		case errors.Is(err, errBufferFull):
		case errors.Is(err, io.EOF):
			if len(l.acc) == 0 {
				return nil, io.EOF
			}
			return append(l.acc, '\n'), nil
		default:
			return nil, err
		}
	}
}

// discard skips the rest of an oversized line, looking for its id as it goes.
func (l *lineReader) discard() error {
	var s idScanner
	s.feed(l.acc)
	l.acc = l.acc[:0]
	for {
		chunk, err := l.readSlice()
		s.feed(chunk)
		switch {
		case err == nil, errors.Is(err, io.EOF):
			return &tooLongError{Max: l.max, ID: s.id()}
		case errors.Is(err, errBufferFull):
		default:
			return err
		}
	}
}

func blank(line []byte) bool {
	return len(bytes.TrimLeft(line, " \t\r\n")) == 0
}

// An idScanner finds the top-level "id" of a JSON object fed to it in
// pieces, keeping only a few bytes: it lets the relay answer a message too
// large to hold. It is best effort (an escaped key is not recognised), which
// is safe: the message is never forwarded, the id only decides whether its
// sender gets an error response.
type idScanner struct {
	depth      int
	inStr, esc bool
	notObject  bool
	key        []byte
	capture    bool
	val        []byte
	n          int // "id" members seen
}

func (s *idScanner) feed(b []byte) {
	for _, c := range b {
		if s.notObject {
			return
		}
		if s.inStr {
			if s.capture {
				s.add(c)
			}
			switch {
			case s.esc:
				s.esc = false
			case c == '\\':
				s.esc = true
			case c == '"':
				s.inStr = false
			case s.depth == 1 && !s.capture && len(s.key) < 8:
				s.key = append(s.key, c)
			}
			continue
		}
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '"':
			s.inStr = true
			if s.depth == 1 && !s.capture {
				s.key = s.key[:0]
			}
		case '{', '[':
			if s.depth == 0 && c == '[' {
				s.notObject = true
				return
			}
			s.depth++
		case '}', ']':
			s.depth--
			if s.depth <= 0 {
				s.capture = false
			}
		case ':':
			if s.depth == 1 && !s.capture && string(s.key) == "id" {
				s.capture = true
				s.val = s.val[:0]
				s.n++
				continue
			}
		case ',':
			if s.depth == 1 {
				s.capture = false
			}
		}
		if s.capture {
			s.add(c)
		}
	}
}

func (s *idScanner) add(c byte) {
	if len(s.val) <= maxIDBytes {
		s.val = append(s.val, c)
	}
}

// id returns the raw id found, or nil if there was none, more than one, or
// it was not a string or an integer of acceptable size.
func (s *idScanner) id() []byte {
	if s.n != 1 || len(s.val) == 0 || len(s.val) > maxIDBytes {
		return nil
	}
	if first, err := args.Validate(s.val, 1); err != nil || first != '"' && first != '-' && (first < '0' || first > '9') {
		return nil
	}
	return bytes.Clone(s.val)
}
