package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/aegis-mcp/aegis/internal/args"
)

// readBufferSize is the size of each direction's read buffer. A message that
// fits is handed on without a copy.
const readBufferSize = 64 << 10

// A lineReader reads the newline-delimited messages of MCP's stdio
// transport, each at most max bytes, without ever buffering more than that.
type lineReader struct {
	r   *bufio.Reader
	max int
	acc []byte // a line longer than the read buffer
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
	return &lineReader{r: bufio.NewReaderSize(r, readBufferSize), max: max}
}

// next returns the next non-blank line, including its newline (one is
// appended to a last line that has none). The slice is valid until the next
// call. At the end of the input it returns io.EOF.
func (l *lineReader) next() ([]byte, error) {
	for {
		line, err := l.r.ReadSlice('\n')
		switch {
		case err == nil:
		case errors.Is(err, bufio.ErrBufferFull):
			line, err = l.long(line)
			if err != nil {
				return nil, err
			}
		case errors.Is(err, io.EOF) && len(line) > 0:
			l.acc = append(append(l.acc[:0], line...), '\n')
			line = l.acc
		default:
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

// long accumulates a line that did not fit the read buffer, first being its
// start.
func (l *lineReader) long(first []byte) ([]byte, error) {
	l.acc = append(l.acc[:0], first...)
	for {
		if len(l.acc) > l.max+1 {
			return nil, l.discard()
		}
		chunk, err := l.r.ReadSlice('\n')
		l.acc = append(l.acc, chunk...)
		switch {
		case err == nil:
			return l.acc, nil
		case errors.Is(err, bufio.ErrBufferFull):
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
		chunk, err := l.r.ReadSlice('\n')
		s.feed(chunk)
		switch {
		case err == nil, errors.Is(err, io.EOF):
			return &tooLongError{Max: l.max, ID: s.id()}
		case errors.Is(err, bufio.ErrBufferFull):
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
