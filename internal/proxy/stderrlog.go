package proxy

import (
	"fmt"
	"os"
	"sync"

	"github.com/aegis-mcp/aegis/internal/filelock"
)

// DefaultStderrLogBytes is the default size of the server's stderr log.
const DefaultStderrLogBytes = 16 << 20

// A stderrLog appends the server's stderr to a file and keeps the file
// under a size: a write that would take it past the size first renames it
// to its name with ".1" appended, replacing the one before, and starts a
// new file. So the log holds at most twice the size, the newest lines, and
// a chatty server cannot fill the disk over months.
//
// Several aegis processes may append to one log (two clients wrapping one
// server). Before each write a stderrLog looks at the log's path: if it is
// no longer the file it holds (another process rotated it, or a person
// removed it), it opens the new one; the file's size there counts every
// writer's lines. The rename happens under a lock on the full file, by the
// first writer to find it full; the others find it renamed and follow.
type stderrLog struct {
	path string
	max  int64 // <= 0: never rotated

	// mu orders Close with Write: Run closes the log when it returns, and
	// a stderr copy it gave up waiting for may still write.
	mu     sync.Mutex
	f      *os.File
	fi     os.FileInfo // f's, to tell whether path is still f
	closed bool
}

// openStderrLog opens the log at path (created with mode 0600), rotated at
// max bytes; max <= 0 never rotates it.
func openStderrLog(path string, max int64) (*stderrLog, error) {
	l := &stderrLog{path: path, max: max}
	if err := l.open(); err != nil {
		return nil, err
	}
	return l, nil
}

// open (re)opens the file at l.path for appending.
func (l *stderrLog) open() error {
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	if l.f != nil {
		l.f.Close()
	}
	l.f, l.fi = f, fi
	return nil
}

// Write appends p, following or rotating the file first as needed. After
// Close it fails, and opens nothing.
func (l *stderrLog) Write(p []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return os.ErrClosed
	}
	size := int64(0)
	switch pi, err := os.Stat(l.path); {
	case err != nil || !os.SameFile(pi, l.fi):
		if err := l.open(); err != nil {
			return err
		}
		size = l.fi.Size()
	default:
		size = pi.Size()
	}
	var rotErr error
	if l.max > 0 && size > 0 && size+int64(len(p)) > l.max {
		// A log that cannot be rotated still takes the line.
		rotErr = l.rotate(int64(len(p)))
	}
	if _, err := l.f.Write(p); err != nil {
		return err
	}
	return rotErr
}

// rotate renames the log, if it is still l.f and still too full for a
// write of n bytes, and opens a new one.
func (l *stderrLog) rotate(n int64) error {
	// Where filelock has no lock, two processes that find the log full at
	// once may both rotate it, and the older lines of one rotation are lost.
	if err := filelock.Lock(l.f); err != nil {
		return fmt.Errorf("locking the log to rotate it: %w", err)
	}
	var err error
	fi, err1 := l.f.Stat()
	pi, err2 := os.Stat(l.path)
	if err1 == nil && err2 == nil && os.SameFile(fi, pi) && fi.Size()+n > l.max {
		err = os.Rename(l.path, l.path+".1")
	}
	filelock.Unlock(l.f)
	if err != nil {
		return err
	}
	return l.open()
}

// Close closes the file. It may be called while a Write is under way,
// which it waits for.
func (l *stderrLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return os.ErrClosed
	}
	l.closed = true
	return l.f.Close()
}
