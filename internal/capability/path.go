package capability

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"syscall"
	"unicode/utf8"
)

// maxPathLen is the longest path argument accepted, in bytes: Linux's
// PATH_MAX (which counts the terminating NUL, so the kernel takes one byte
// less). A longer path cannot reach the kernel in one piece, so it can only
// be something a server rewrites first, in a way we cannot know.
const maxPathLen = 4096

// maxSymlinks is how many symbolic links one resolution may follow before
// it is a loop: Linux's MAXSYMLINKS.
const maxSymlinks = 40

// processDirs are where Linux shows processes as files. What a path under
// them names depends on the process that opens it (/proc/self, /dev/fd/0),
// and some of their links reach any file (/proc/self/root/home/a/.ssh), so
// the server and aegis would read such a path differently.
var processDirs = [...]string{"/proc", "/dev/fd", "/dev/stdin", "/dev/stdout", "/dev/stderr"}

// underProcess returns the process directory that the clean absolute path p
// is in or under, or "".
func underProcess(p string) string {
	if len(p) < len("/proc") || p[1] != 'p' && p[1] != 'd' {
		return "" // the common case, decided by one byte
	}
	for _, dir := range processDirs {
		if strings.HasPrefix(p, dir) && (len(p) == len(dir) || p[len(dir)] == '/') {
			return dir
		}
	}
	return ""
}

// PathOptions says how to canonicalise a path argument for one server. The
// zero value canonicalises lexically with no home (so "~" fails closed).
type PathOptions struct {
	// Home is the home directory of the server's user, against which "~"
	// and "~/x" expand. It SHOULD be canonical itself; it is cleaned, and
	// resolved with the rest of the path when Readlink is set. Empty: a
	// path starting with "~" is an error.
	Home string

	// Readlink, when set, resolves symbolic links (the server is local). It
	// has os.Readlink's contract: the link target, or an error. An error
	// satisfying errors.Is(err, fs.ErrNotExist) (or syscall.ENOTDIR: a
	// component before it is not a directory) means the path does not
	// exist; syscall.EINVAL means it exists and is not a link. Any other
	// error (permission denied, I/O) fails the canonicalisation: we cannot
	// know what the server would reach. It is the only I/O, injected by the
	// caller: this package does none. Nil: paths are canonicalised
	// lexically only.
	Readlink func(name string) (string, error)

	// Bases, when set, are the directories a relative path is resolved
	// against, as the reference filesystem server resolves it against its
	// allowed directories: the first base under which the path, joined to
	// it and cleaned, stays inside one of the bases; if none, the first
	// base. Each MUST be absolute and clean. Empty: a relative path is an
	// error (aegis cannot know what the server resolves it against).
	Bases []string
}

// CanonPath returns the canonical absolute form of a path argument, as Linux
// reads it: the absolute, clean path a policy matches with [PathUnder].
//
// "~" and "~/x" expand against o.Home; "~user" is an error, since we cannot
// know that user's home. Then the path must be absolute: relative paths (a
// server resolves them against a working directory we do not know), empty
// paths, NUL bytes (a C server stops at the first one), file: URLs in any
// case, invalid UTF-8 and paths longer than 4096 bytes are errors. Repeated
// slashes, "." and trailing slashes are dropped, and ".." is resolved, never
// above "/". A backslash is an ordinary byte on Linux, not a separator:
// `/home/a/.ssh\id_rsa` is a file in /home/a, and `\\server\share` is a
// relative path; a server on Windows needs its own canonicaliser.
//
// The result is in Unicode NFC: canonically equivalent spellings (an NFC
// and an NFD "café") are one path, as macOS volumes and the reference
// filesystem server treat them (see [NormPath]). Links are resolved by the
// bytes given and the bytes the links hold, before normalising.
//
// Invalid UTF-8 is refused although Linux names are bytes: arguments arrive
// as JSON strings, so a server decodes them to text before it opens
// anything, and a byte sequence that is not text reaches it in some
// replaced form we cannot predict.
//
// With o.Readlink set, symbolic links are resolved component by component
// as the kernel does: absolute and relative targets, a ".." after a link
// going to the parent of the link's target, at most 40 links (more is a
// loop, an error). A link as the final component is followed even when it
// dangles, because writing through it creates its target. Once a component
// does not exist, the rest is appended lexically, without asking Readlink.
// Some servers (Node's path.resolve before fs.realpath, as the reference
// filesystem MCP server does) clean ".." lexically before resolving links;
// when the argument has a ".." and the two readings reach different paths,
// the error wraps [ErrAmbiguous].
//
// A path that is or resolves through /proc, /dev/fd or /dev/std{in,out,err}
// is refused with [ErrAmbiguous]: what it names depends on the process that
// opens it (the server, not aegis), and /proc/self/root reaches every file.
//
// The result names the object that opening the path reaches. An operation
// that acts on a final link itself (unlink, rename, lstat) acts on the link,
// in the directory of the unresolved path; a binding that derives fs.write
// for such operations must account for that.
func CanonPath(raw string, o *PathOptions) (string, error) {
	if o == nil {
		o = &PathOptions{}
	}
	p, err := checkPath(raw, o.Home, o.Bases)
	if err != nil {
		return "", err
	}
	if o.Readlink == nil {
		if !isClean(p) {
			p = path.Clean(p)
		}
		if dir := underProcess(p); dir != "" {
			return "", fmt.Errorf("path %q is under %s, which is %w: it names the process that opens it", raw, dir, ErrAmbiguous)
		}
		return lengthOK(raw, p)
	}
	phys, err := resolve(p, o.Readlink)
	if err != nil {
		return "", fmt.Errorf("path %q: %w", raw, err)
	}
	if hasDotDot(p) {
		lex, err := resolve(path.Clean(p), o.Readlink)
		if err != nil {
			return "", fmt.Errorf("path %q: %w", raw, err)
		}
		if lex != phys {
			return "", fmt.Errorf("path %q is %w: %s if \"..\" is resolved lexically, %s physically",
				raw, ErrAmbiguous, lex, phys)
		}
	}
	return lengthOK(raw, phys)
}

// checkPath refuses what no canonical form exists for and expands "~". The
// result is absolute but not clean.
func checkPath(raw, home string, bases []string) (string, error) {
	plain := asciiNoNUL(raw) // then it has no NUL and is valid UTF-8
	switch {
	case raw == "":
		return "", errors.New("empty path")
	case len(raw) > maxPathLen:
		return "", fmt.Errorf("path of %d bytes is too long (at most %d)", len(raw), maxPathLen)
	case !plain && strings.IndexByte(raw, 0) >= 0:
		return "", fmt.Errorf("path %q contains a NUL byte", raw)
	case !plain && !utf8.ValidString(raw):
		return "", fmt.Errorf("path %q is not valid UTF-8", raw)
	case len(raw) >= 5 && strings.EqualFold(raw[:5], "file:"):
		return "", fmt.Errorf("path %q is a file: URL, not a path", raw)
	}
	p := raw
	if raw[0] == '~' {
		user, rest, _ := strings.Cut(raw[1:], "/")
		if user != "" {
			return "", fmt.Errorf("path %q names the home of user %q (~user): not supported", raw, "~"+user)
		}
		if home == "" {
			return "", fmt.Errorf("path %q starts with ~ but the server has no home directory configured", raw)
		}
		if home[0] != '/' || strings.IndexByte(home, 0) >= 0 {
			return "", fmt.Errorf("home directory %q is not an absolute path", home)
		}
		p = path.Clean(home) + "/" + rest
	}
	if p[0] != '/' {
		if len(bases) == 0 {
			return "", fmt.Errorf("path %q is not absolute", raw)
		}
		if isDrivePath(p) {
			// The server refuses it rather than make C:\x a file name.
			return "", fmt.Errorf("path %q is a Windows drive path, which the server refuses on a POSIX host", raw)
		}
		return againstBases(p, bases), nil
	}
	return p, nil
}

// againstBases resolves the relative path rel as the reference filesystem
// server does (PathOptions.Bases).
func againstBases(rel string, bases []string) string {
	for _, b := range bases {
		c := path.Join(b, rel)
		for _, within := range bases {
			if PathUnder(c, within) {
				return c
			}
		}
	}
	return path.Join(bases[0], rel)
}

// isDrivePath reports whether p starts as a Windows drive path does: a
// letter, a colon, then a slash, a backslash or nothing.
func isDrivePath(p string) bool {
	if len(p) < 2 || p[1] != ':' || !('a' <= p[0]|0x20 && p[0]|0x20 <= 'z') {
		return false
	}
	return len(p) == 2 || p[2] == '/' || p[2] == '\\'
}

// isClean reports whether the absolute path p is already what path.Clean
// returns for it: no empty, "." or ".." component and no trailing slash
// ("/" itself is clean). Most path arguments are, and telling so takes a
// look at the byte after each slash, eight bytes at a time, where
// path.Clean copies every byte.
func isClean(p string) bool {
	if p == "/" {
		return true
	}
	n := len(p)
	if n == 0 || p[0] != '/' || p[n-1] == '/' {
		return false
	}
	// Each byte after a slash must start a name other than "." or "..": a
	// slash or a dot there is looked at closely, which is rare.
	i := 0
	for ; i+9 <= n; i += 8 {
		w, next := load64(p, i), load64(p, i+1)
		if zeroBytes(w^slashBytes)&(zeroBytes(next^slashBytes)|zeroBytes(next^dotBytes)) != 0 {
			if !cleanAfterSlashes(p, i, i+8) {
				return false
			}
		}
	}
	return cleanAfterSlashes(p, i, n-1)
}

// cleanAfterSlashes checks the components that start after the slashes in
// p[from:to] (to < len(p)).
func cleanAfterSlashes(p string, from, to int) bool {
	for j := from; j < to; j++ {
		if p[j] != '/' {
			continue
		}
		name := p[j+1:]
		if k := strings.IndexByte(name, '/'); k >= 0 {
			name = name[:k]
		}
		switch name {
		case "", ".", "..":
			return false
		}
	}
	return true
}

// SWAR constants: a byte of ones, the low seven bits of each byte, each
// byte a slash, each a dot.
const (
	bytes01    = 0x0101010101010101
	bytes7f    = 0x7f7f7f7f7f7f7f7f
	bytes80    = 0x8080808080808080
	slashBytes = '/' * bytes01
	dotBytes   = '.' * bytes01
)

// zeroBytes sets the high bit of each zero byte of w, and only those.
func zeroBytes(w uint64) uint64 { return ^((w&bytes7f + bytes7f) | w | bytes7f) }

// load64 returns s[i:i+8] as a little-endian word.
func load64(s string, i int) uint64 {
	b := s[i : i+8]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// trimSlashes is strings.TrimRight(p, "/"), without its call for the usual
// path that has no trailing slash.
func trimSlashes(p string) string {
	for len(p) > 0 && p[len(p)-1] == '/' {
		p = p[:len(p)-1]
	}
	return p
}

// IsASCII reports whether s is ASCII, eight bytes at a time.
func IsASCII(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		if load64(s, i)&bytes80 != 0 {
			return false
		}
	}
	if i < len(s) && len(s) >= 8 { // the rest, in the word that ends s
		return load64(s, len(s)-8)&bytes80 == 0
	}
	for ; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// asciiNoNUL reports whether s is ASCII without a NUL byte, eight bytes at a
// time: such a string is valid UTF-8 and needs no search for NUL.
func asciiNoNUL(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := load64(s, i)
		if (w|zeroBytes(w))&bytes80 != 0 {
			return false
		}
	}
	if i < len(s) && len(s) >= 8 { // the rest, in the word that ends s
		w := load64(s, len(s)-8)
		return (w|zeroBytes(w))&bytes80 == 0
	}
	for ; i < len(s); i++ {
		if s[i] == 0 || s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// lengthOK finishes a canonical path: in NFC ([NormPath]), which only a
// path with a name that is not ASCII needs, and not too long. The links
// are resolved by the bytes the file system holds before: it is the
// spelling, not the file, that NFC picks.
func lengthOK(raw, p string) (string, error) {
	if !IsASCII(p) {
		n, ok := NormPath(p)
		if !ok {
			return "", fmt.Errorf("path %q resolves to %q, which is not valid UTF-8", raw, p)
		}
		p = n
	}
	if len(p) > maxPathLen {
		return "", fmt.Errorf("path %q expands to %d bytes, too long (at most %d)", raw, len(p), maxPathLen)
	}
	return p, nil
}

// hasDotDot reports whether p has a ".." component.
func hasDotDot(p string) bool {
	for {
		i := strings.Index(p, "..")
		if i < 0 {
			return false
		}
		if (i == 0 || p[i-1] == '/') && (i+2 == len(p) || p[i+2] == '/') {
			return true
		}
		p = p[i+2:]
	}
}

// resolve walks the absolute path p from the root the way the kernel's path
// lookup does, asking readlink about each component until one does not
// exist. The result is clean.
func resolve(p string, readlink func(string) (string, error)) (string, error) {
	dest := "/" // resolved so far: clean, absolute, no links up to missing
	rest := p   // still to walk
	links := 0
	missing := false
	for rest != "" {
		var name string
		name, rest, _ = strings.Cut(strings.TrimLeft(rest, "/"), "/")
		switch name {
		case "", ".":
			continue
		case "..":
			dest = path.Dir(dest)
			continue
		}
		next := dest + "/" + name
		if dest == "/" {
			next = "/" + name
		}
		if len(next) > maxPathLen {
			return "", fmt.Errorf("resolves to more than %d bytes", maxPathLen)
		}
		if missing {
			dest = next
			continue
		}
		if dir := underProcess(next); dir != "" {
			return "", fmt.Errorf("resolves through %s, which is %w: it names the process that opens it", dir, ErrAmbiguous)
		}
		target, err := readlink(next)
		switch {
		case err == nil:
		case errors.Is(err, syscall.EINVAL):
			dest = next
			continue
		case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
			dest, missing = next, true
			continue
		default:
			return "", fmt.Errorf("reading symbolic link %s: %w", next, err)
		}
		links++
		switch {
		case links > maxSymlinks:
			return "", fmt.Errorf("too many symbolic links (more than %d) at %s", maxSymlinks, next)
		case target == "":
			return "", fmt.Errorf("symbolic link %s has an empty target", next)
		case len(target) > maxPathLen:
			return "", fmt.Errorf("symbolic link %s has a target longer than %d bytes", next, maxPathLen)
		case strings.IndexByte(target, 0) >= 0:
			return "", fmt.Errorf("symbolic link %s has a target with a NUL byte", next)
		}
		if target[0] == '/' {
			dest = "/"
		}
		rest = target + "/" + rest
	}
	if dir := underProcess(dest); dir != "" { // climbed there lexically, past a missing component
		return "", fmt.Errorf("resolves to %s under %s, which is %w: it names the process that opens it", dest, dir, ErrAmbiguous)
	}
	return dest, nil
}

// PathUnder reports whether path is dir or lies under it, component-wise:
// /home/a/.sshx is not under /home/a/.ssh; /home/a/.ssh is under itself; "/"
// contains everything. Both MUST be canonical ([CanonPath]); trailing
// slashes are tolerated, and a path or dir that is not absolute is under
// nothing and contains nothing.
func PathUnder(path, dir string) bool {
	if path == "" || dir == "" || path[0] != '/' || dir[0] != '/' {
		return false
	}
	path, dir = trimSlashes(path), trimSlashes(dir)
	if dir == "" { // the root
		return true
	}
	return strings.HasPrefix(path, dir) && (len(path) == len(dir) || path[len(dir)] == '/')
}
