package sandbox

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain doubles as the sandbox's init (the test binary is what
// /proc/self/exe runs) and as the stand-in server: run as "standin", it
// tries each probe of its arguments on its own and says on stdout what
// happened, one line each.
func TestMain(m *testing.M) {
	if IsInit() {
		os.Exit(Init())
	}
	if len(os.Args) > 0 && filepath.Base(os.Args[0]) == "standin" {
		standin(os.Args[1:])
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// standin runs each probe, written KIND:ARG: read (a file), write (create
// a file), mkdir (a directory and its parents), rename (FROM>TO), tcp
// (connect to an address and read a line), unix (the same on a socket
// file), sha256 (a file's digest), env (a variable). $TMPDIR in an
// argument is the stand-in's.
func standin(probes []string) {
	for _, p := range probes {
		kind, arg, _ := strings.Cut(p, ":")
		arg = strings.ReplaceAll(arg, "$TMPDIR", os.Getenv("TMPDIR"))
		var out string
		var err error
		switch kind {
		case "read":
			var b []byte
			b, err = os.ReadFile(arg)
			out = strings.TrimSpace(string(b))
		case "write":
			err = os.WriteFile(arg, []byte("x"), 0o600)
		case "mkdir":
			err = os.MkdirAll(arg, 0o700)
		case "rename":
			from, to, _ := strings.Cut(arg, ">")
			err = os.Rename(from, to)
		case "tcp", "unix":
			var c net.Conn
			c, err = net.DialTimeout(kind, arg, 2*time.Second)
			if err == nil {
				c.SetDeadline(time.Now().Add(2 * time.Second))
				b := make([]byte, 64)
				n, rerr := c.Read(b)
				out, err = strings.TrimSpace(string(b[:n])), rerr
				c.Close()
			}
		case "sha256":
			// The file's digest: a file of many lines in one line.
			var b []byte
			if b, err = os.ReadFile(arg); err == nil {
				out = fmt.Sprintf("%x", sha256.Sum256(b))
			}
		case "env":
			v, ok := os.LookupEnv(arg)
			if !ok {
				err = errors.New("unset")
			}
			out = v
		default:
			err = errors.New("unknown probe")
		}
		fmt.Printf("%s\t%s\n", p, outcome(out, err))
	}
}

// outcome says "ok VALUE" or the error's errno name (EACCES, ENOENT, ...).
func outcome(out string, err error) string {
	if err == nil {
		return "ok " + out
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errnoName(errno)
	}
	return "error " + err.Error()
}

func errnoName(e syscall.Errno) string {
	for name, v := range map[string]syscall.Errno{
		"EACCES": syscall.EACCES, "ENOENT": syscall.ENOENT, "EPERM": syscall.EPERM,
		"ENETUNREACH": syscall.ENETUNREACH, "ECONNREFUSED": syscall.ECONNREFUSED,
		"EROFS": syscall.EROFS, "EAFNOSUPPORT": syscall.EAFNOSUPPORT,
	} {
		if e == v {
			return name
		}
	}
	return "errno " + e.Error()
}
