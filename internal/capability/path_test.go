package capability

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/text/unicode/norm"
)

func TestCanonPathLexical(t *testing.T) {
	home := &PathOptions{Home: "/home/a"}
	long := "/" + strings.Repeat("a", maxPathLen) // 4097 bytes
	tests := []struct {
		name    string
		raw     string
		opts    *PathOptions
		want    string
		wantErr string // substring of the error; "" means success
	}{
		// Tilde expansion.
		{name: "tilde file", raw: "~/.ssh/id_rsa", opts: home, want: "/home/a/.ssh/id_rsa"},
		{name: "tilde alone", raw: "~", opts: home, want: "/home/a"},
		{name: "tilde slash", raw: "~/", opts: home, want: "/home/a"},
		{name: "tilde double slash", raw: "~//.ssh", opts: home, want: "/home/a/.ssh"},
		{name: "tilde dotdot back into home", raw: "~/../a/.ssh", opts: home, want: "/home/a/.ssh"},
		{name: "tilde dotdot out of home", raw: "~/../../etc/passwd", opts: home, want: "/etc/passwd"},
		{name: "tilde user", raw: "~root/x", opts: home, wantErr: `"~root"`},
		{name: "tilde user alone", raw: "~root", opts: home, wantErr: `"~root"`},
		{name: "tilde plus (bash PWD)", raw: "~+/x", opts: home, wantErr: "~user"},
		{name: "tilde minus (bash OLDPWD)", raw: "~-", opts: home, wantErr: "~user"},
		{name: "tilde backslash", raw: `~\x`, opts: home, wantErr: "~user"},
		{name: "tilde without home", raw: "~/.ssh", opts: &PathOptions{}, wantErr: "no home"},
		{name: "tilde nil options", raw: "~", opts: nil, wantErr: "no home"},
		{name: "tilde relative home", raw: "~/x", opts: &PathOptions{Home: "home/a"}, wantErr: "home"},
		{name: "tilde home with NUL", raw: "~/x", opts: &PathOptions{Home: "/home/a\x00"}, wantErr: "home"},
		{name: "tilde home unclean", raw: "~/x", opts: &PathOptions{Home: "/home//a/"}, want: "/home/a/x"},
		{name: "tilde home root", raw: "~/.ssh", opts: &PathOptions{Home: "/"}, want: "/.ssh"},
		{name: "tilde in the middle is a name", raw: "/a/~/b", opts: home, want: "/a/~/b"},
		{name: "tilde expansion too long", raw: "~/" + strings.Repeat("b", 100), opts: &PathOptions{Home: "/" + strings.Repeat("h", maxPathLen-50)}, wantErr: "long"},

		// Cleaning.
		{name: "dotdot", raw: "/home/a/projects/../.ssh/id_rsa", want: "/home/a/.ssh/id_rsa"},
		{name: "double slash and dot", raw: "/home/a//.ssh/./id_rsa", want: "/home/a/.ssh/id_rsa"},
		{name: "trailing slash", raw: "/home/a/.ssh/", want: "/home/a/.ssh"},
		{name: "dotdot above root", raw: "/../../etc/passwd", want: "/etc/passwd"},
		{name: "leading double slash", raw: "//etc/passwd", want: "/etc/passwd"},
		{name: "root", raw: "/", want: "/"},
		{name: "root dot", raw: "/.", want: "/"},
		{name: "root dotdot", raw: "/..", want: "/"},
		{name: "many slashes", raw: "////", want: "/"},
		{name: "dotdot at end", raw: "/a/b/..", want: "/a"},
		{name: "three dots is a name", raw: "/a/...", want: "/a/..."},
		{name: "dot-prefixed names", raw: "/a/..b/.c", want: "/a/..b/.c"},
		{name: "trailing space is a byte", raw: "/etc/passwd ", want: "/etc/passwd "},
		{name: "newline is a byte", raw: "/tmp/a\nb", want: "/tmp/a\nb"},
		{name: "already canonical", raw: "/home/a/projects/app/main.go", want: "/home/a/projects/app/main.go"},
		{name: "unicode", raw: "/home/a/Übung/файл", want: "/home/a/Übung/файл"},
		{name: "longest accepted", raw: long[:maxPathLen], want: long[:maxPathLen]},

		// Backslash is an ordinary byte on Linux.
		{name: "UNC path", raw: `\\server\share`, wantErr: "not absolute"},
		{name: "backslash inside name", raw: `/home/a/.ssh\id_rsa`, want: `/home/a/.ssh\id_rsa`},
		{name: "backslash dotdot is a name", raw: `/home/a/x\..\.ssh`, want: `/home/a/x\..\.ssh`},
		{name: "windows drive", raw: `C:\Users\a`, wantErr: "not absolute"},

		// Fail closed.
		{name: "empty", raw: "", wantErr: "empty"},
		{name: "space", raw: " ", wantErr: "not absolute"},
		{name: "leading space", raw: " /etc/passwd", wantErr: "not absolute"},
		{name: "relative", raw: "relative/x", wantErr: "not absolute"},
		{name: "dot relative", raw: "./x", wantErr: "not absolute"},
		{name: "dotdot relative", raw: "../x", wantErr: "not absolute"},
		{name: "dot", raw: ".", wantErr: "not absolute"},

		// Relative paths against the server's allowed directories (Bases),
		// as server-filesystem resolves them: the first base under which
		// the joined path stays inside a base, else the first base.
		{name: "relative against one base", raw: "notes.txt", opts: &PathOptions{Bases: []string{"/srv/a"}}, want: "/srv/a/notes.txt"},
		{name: "relative dot", raw: ".", opts: &PathOptions{Bases: []string{"/srv/a"}}, want: "/srv/a"},
		{name: "relative dot slash", raw: "./x/../y", opts: &PathOptions{Bases: []string{"/srv/a"}}, want: "/srv/a/y"},
		{name: "relative first base wins", raw: "x", opts: &PathOptions{Bases: []string{"/srv/a", "/srv/b"}}, want: "/srv/a/x"},
		{name: "relative escaping the first base into the second", raw: "../b/x", opts: &PathOptions{Bases: []string{"/srv/a", "/srv/b"}}, want: "/srv/b/x"},
		{name: "relative escaping every base falls back to the first", raw: "../../home/a/.ssh/id_rsa", opts: &PathOptions{Bases: []string{"/srv/a", "/srv/b"}}, want: "/home/a/.ssh/id_rsa"},
		{name: "relative escaping by the second base", raw: "../../etc/passwd", opts: &PathOptions{Bases: []string{"/srv/a/deep", "/etc"}}, want: "/etc/passwd"},
		{name: "relative that looks like a drive", raw: "C:\\Users\\x", opts: &PathOptions{Bases: []string{"/srv/a"}}, wantErr: "Windows drive"},
		{name: "relative drive with slash", raw: "c:/x", opts: &PathOptions{Bases: []string{"/srv/a"}}, wantErr: "Windows drive"},
		{name: "relative bare drive", raw: "Z:", opts: &PathOptions{Bases: []string{"/srv/a"}}, wantErr: "Windows drive"},
		{name: "relative with a colon, not a drive", raw: "ab:c", opts: &PathOptions{Bases: []string{"/srv/a"}}, want: "/srv/a/ab:c"},
		{name: "relative backslash is a name", raw: "\\\\server\\share", opts: &PathOptions{Bases: []string{"/srv/a"}}, want: "/srv/a/\\\\server\\share"},
		{name: "relative into /proc", raw: "../../proc/self/root/etc/passwd", opts: &PathOptions{Bases: []string{"/srv/a"}}, wantErr: "process"},
		{name: "tilde still expands with bases", raw: "~/x", opts: &PathOptions{Home: "/home/a", Bases: []string{"/srv/a"}}, want: "/home/a/x"},
		{name: "NUL inside", raw: "a\x00b", wantErr: "NUL"},
		{name: "NUL after absolute", raw: "/a\x00", wantErr: "NUL"},
		{name: "NUL truncation attack", raw: "/srv/allowed/x\x00/../../../home/a/.ssh", wantErr: "NUL"},
		{name: "file URL", raw: "file:///etc/passwd", wantErr: "file: URL"},
		{name: "file URL upper case", raw: "FILE:/etc/passwd", wantErr: "file: URL"},
		{name: "file URL mixed case", raw: "FiLe://localhost/etc/passwd", wantErr: "file: URL"},
		{name: "file URL opaque", raw: "file:etc", wantErr: "file: URL"},
		{name: "file URL bare", raw: "file:", wantErr: "file: URL"},
		{name: "http URL", raw: "http://x/etc/passwd", wantErr: "not absolute"},
		{name: "invalid UTF-8", raw: "/tmp/\xff", wantErr: "UTF-8"},
		{name: "overlong UTF-8 slash", raw: "/tmp/\xc0\xaf..\xc0\xaf.ssh", wantErr: "UTF-8"},
		{name: "too long", raw: long, wantErr: "long"},
		// /proc names the opening process: it means something else to the
		// server than to us, and its root link reaches every file.
		{name: "proc self root", raw: "/proc/self/root/home/a/.ssh/id_rsa", wantErr: "/proc"},
		{name: "proc self cwd", raw: "/proc/self/cwd/.ssh/id_rsa", wantErr: "/proc"},
		{name: "proc pid root", raw: "/proc/1/root/etc/shadow", wantErr: "/proc"},
		{name: "proc environ", raw: "/proc/self/environ", wantErr: "/proc"},
		{name: "proc itself", raw: "/proc", wantErr: "/proc"},
		{name: "proc unclean", raw: "//proc/./self/../1/root", wantErr: "/proc"},
		{name: "dev fd", raw: "/dev/fd/3", wantErr: "/dev/fd"},
		{name: "dev stdout", raw: "/dev/stdout", wantErr: "/dev/stdout"},
		{name: "dev stdin", raw: "/dev/stdin", wantErr: "/dev/stdin"},
		{name: "dev stderr", raw: "/dev/stderr", wantErr: "/dev/stderr"},
		{name: "proc prefix is not proc", raw: "/procx/self", want: "/procx/self"},
		{name: "dev fd prefix is not dev fd", raw: "/dev/fdx", want: "/dev/fdx"},
		{name: "dev null", raw: "/dev/null", want: "/dev/null"},
		{name: "leaving proc lexically", raw: "/proc/../etc/passwd", want: "/etc/passwd"},
		{name: "too long even if it cleans short", raw: "/" + strings.Repeat("/", maxPathLen), wantErr: "long"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CanonPath(tt.raw, tt.opts)
			checkPathResult(t, tt.raw, got, err, tt.want, tt.wantErr)
			if (strings.HasPrefix(tt.name, "proc ") || strings.HasPrefix(tt.name, "dev ")) && tt.wantErr != "" {
				if !errors.Is(err, ErrAmbiguous) {
					t.Errorf("CanonPath(%q) error %v does not wrap ErrAmbiguous", tt.raw, err)
				}
			}
		})
	}
}

func checkPathResult(t *testing.T, raw, got string, err error, want, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil {
			t.Fatalf("CanonPath(%q) = %q, want error containing %q", raw, got, wantErr)
		}
		if !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("CanonPath(%q) error = %q, want it to contain %q", raw, err, wantErr)
		}
		if got != "" {
			t.Errorf("CanonPath(%q) returned %q along with an error", raw, got)
		}
		return
	}
	if err != nil {
		t.Fatalf("CanonPath(%q) error = %v, want %q", raw, err, want)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CanonPath(%q) mismatch (-want +got):\n%s", raw, diff)
	}
}

// linkFS is a file system for Readlink: links maps a path to its link
// target, dirs the paths that exist and are not links (true for a directory,
// false for a regular file), and errs injects other errors. newLinkFS takes
// the existing paths as a list, directories with a trailing "/", and adds
// their parents.
type linkFS struct {
	links map[string]string
	dirs  map[string]bool // true: directory, false: regular file
	errs  map[string]error
	calls int
}

func newLinkFS(links map[string]string, paths ...string) *linkFS {
	f := &linkFS{links: links, dirs: map[string]bool{"/": true}, errs: map[string]error{}}
	for _, p := range paths {
		dir := strings.HasSuffix(p, "/")
		p = path.Clean(p)
		for d := path.Dir(p); d != "/"; d = path.Dir(d) {
			f.dirs[d] = true
		}
		f.dirs[p] = dir
	}
	return f
}

func (f *linkFS) Readlink(name string) (string, error) {
	f.calls++
	if name != path.Clean(name) || !path.IsAbs(name) {
		// CanonPath must only ask about clean absolute paths.
		return "", &fs.PathError{Op: "readlink", Path: name, Err: syscall.EIO}
	}
	if err, ok := f.errs[name]; ok {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: err}
	}
	// A prefix that is a regular file or a link makes the lookup of name
	// fail the way the kernel's does: CanonPath must never ask past a link.
	for d := path.Dir(name); d != "/"; d = path.Dir(d) {
		if _, ok := f.links[d]; ok {
			return "", &fs.PathError{Op: "readlink", Path: name, Err: syscall.EIO}
		}
		if isDir, ok := f.dirs[d]; ok && !isDir {
			return "", &fs.PathError{Op: "readlink", Path: name, Err: syscall.ENOTDIR}
		}
	}
	if target, ok := f.links[name]; ok {
		return target, nil
	}
	if _, ok := f.dirs[name]; ok {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: syscall.EINVAL}
	}
	return "", &fs.PathError{Op: "readlink", Path: name, Err: syscall.ENOENT}
}

// linkWorld is the file system of the symlink tests: a home with a .ssh
// directory and a root /srv/allowed that a policy would allow, full of
// links that lead out of it.
func linkWorld() *linkFS {
	links := map[string]string{
		"/srv/allowed/keys":      "/home/a/.ssh",
		"/srv/allowed/rel":       "../../home/a/.ssh",
		"/srv/allowed/chain1":    "chain2",
		"/srv/allowed/chain2":    "./sub/../chain3",
		"/srv/allowed/chain3":    "/srv/allowed/keys",
		"/srv/allowed/loop1":     "loop2",
		"/srv/allowed/loop2":     "/srv/allowed/loop1",
		"/srv/allowed/self":      "self",
		"/srv/allowed/dangling":  "/home/a/.ssh/authorized_keys2",
		"/srv/allowed/dangrel":   "../../home/a/.ssh/authorized_keys2",
		"/srv/allowed/dangdeep":  "/home/a/.ssh/newdir/x",
		"/srv/allowed/proj":      "/home/a/projects",
		"/srv/allowed/root":      "/",
		"/srv/allowed/slashy":    "/home/a//.ssh/./",
		"/srv/allowed/dot":       ".",
		"/srv/allowed/empty":     "",
		"/srv/allowed/nul":       "/home/a\x00",
		"/srv/allowed/toolong":   "/" + strings.Repeat("x", maxPathLen+1),
		"/srv/allowed/file-link": "/etc/passwd",
		"/srv/allowed/sib":       "real",
		"/home/a/tmplink":        "/tmp",
		"/h":                     "/home/a",
		"/usr/home":              "/home",
		"/srv/allowed/cwd":       "/proc/self/cwd",
		"/srv/allowed/climb":     "nope/../../../proc/self/root/etc/shadow",
		"/srv/allowed/fd":        "/dev/fd/3",
		"/proc/self":             "4242",
		"/proc/4242/cwd":         "/home/a/projects",
		"/proc/4242/root":        "/",
		"/dev/fd":                "/proc/self/fd",
		"/dev/stdout":            "/proc/self/fd/1",
	}
	return newLinkFS(links,
		"/home/a/.ssh/id_rsa", "/home/a/.ssh/authorized_keys",
		"/home/a/projects/app/", "/srv/allowed/real/", "/srv/allowed/sub/", "/srv/secret/",
		"/etc/passwd", "/tmp/", "/usr/", "/proc/4242/", "/proc/cpuinfo", "/dev/null",
	)
}

func TestCanonPathSymlinks(t *testing.T) {
	chain := func(n int) *linkFS {
		// /c/l0 -> l1 -> ... -> l(n-1) -> /etc: n links in a row.
		f := linkWorld()
		for i := range n - 1 {
			f.links["/c/l"+strconv.Itoa(i)] = "l" + strconv.Itoa(i+1)
		}
		f.links["/c/l"+strconv.Itoa(n-1)] = "/etc"
		f.dirs["/c"] = true
		return f
	}
	tests := []struct {
		name    string
		raw     string
		fs      *linkFS
		home    string
		want    string
		wantErr string
		ambig   bool // the error must wrap ErrAmbiguous
	}{
		{name: "no links", raw: "/home/a/.ssh/id_rsa", want: "/home/a/.ssh/id_rsa"},
		{name: "no links missing file", raw: "/home/a/projects/app/new.go", want: "/home/a/projects/app/new.go"},
		{name: "absolute link to .ssh", raw: "/srv/allowed/keys/id_rsa", want: "/home/a/.ssh/id_rsa"},
		{name: "link as final component", raw: "/srv/allowed/keys", want: "/home/a/.ssh"},
		{name: "link with trailing slash", raw: "/srv/allowed/keys/", want: "/home/a/.ssh"},
		{name: "relative link with dotdot", raw: "/srv/allowed/rel/id_rsa", want: "/home/a/.ssh/id_rsa"},
		{name: "chain of links", raw: "/srv/allowed/chain1/authorized_keys", want: "/home/a/.ssh/authorized_keys"},
		{name: "link to root", raw: "/srv/allowed/root/etc/passwd", want: "/etc/passwd"},
		{name: "unclean link target", raw: "/srv/allowed/slashy/id_rsa", want: "/home/a/.ssh/id_rsa"},
		{name: "link to dot", raw: "/srv/allowed/dot/dot/dot/keys", want: "/home/a/.ssh"},
		{name: "link to a file", raw: "/srv/allowed/file-link", want: "/etc/passwd"},
		{name: "tilde through link", raw: "~/.ssh/id_rsa", home: "/h", want: "/home/a/.ssh/id_rsa"},
		{name: "home under linked parent", raw: "/usr/home/a/.ssh", want: "/home/a/.ssh"},
		{name: "dot components", raw: "/srv/./allowed/./keys/.", want: "/home/a/.ssh"},
		{name: "dotdot without links", raw: "/home/a/projects/../.ssh/id_rsa", want: "/home/a/.ssh/id_rsa"},
		{name: "dotdot before link", raw: "/srv/secret/../allowed/keys", want: "/home/a/.ssh"},
		{name: "dotdot above root", raw: "/../srv/allowed/keys", want: "/home/a/.ssh"},

		// Dangling links: writing through them creates the target.
		{name: "dangling final link", raw: "/srv/allowed/dangling", want: "/home/a/.ssh/authorized_keys2"},
		{name: "dangling relative final link", raw: "/srv/allowed/dangrel", want: "/home/a/.ssh/authorized_keys2"},
		{name: "dangling link, missing parent", raw: "/srv/allowed/dangdeep", want: "/home/a/.ssh/newdir/x"},
		{name: "dangling link in the middle", raw: "/srv/allowed/dangdeep/more", want: "/home/a/.ssh/newdir/x/more"},

		// Non-existent tails are appended lexically, never looked up.
		{name: "missing tail", raw: "/srv/allowed/nope/keys/id_rsa", want: "/srv/allowed/nope/keys/id_rsa"},
		{name: "path through a regular file", raw: "/etc/passwd/keys", want: "/etc/passwd/keys"},

		// A ".." after a link goes to the parent of the target (the
		// kernel); a server that cleans first goes elsewhere: ambiguous.
		{name: "dotdot after link diverges", raw: "/srv/allowed/proj/../.ssh/id_rsa", ambig: true, wantErr: "/home/a/.ssh/id_rsa physically"},
		{name: "dotdot after link to tmp", raw: "/home/a/tmplink/../.ssh", ambig: true, wantErr: "/.ssh physically"},
		{name: "dotdot after link, tilde", raw: "~/tmplink/../.ssh/id_rsa", home: "/home/a", ambig: true, wantErr: "physically"},
		{name: "dotdot after missing climbs to link", raw: "/srv/allowed/nope/../keys", ambig: true, wantErr: "lexically"},
		{name: "dotdot after link to dot", raw: "/srv/allowed/dot/../real", ambig: true, wantErr: "/srv/real physically"},
		{name: "dotdot after link to sibling agrees", raw: "/srv/allowed/sib/../keys", want: "/home/a/.ssh"},
		{name: "dotdot after link and missing", raw: "/srv/allowed/keys/nope/../../x", ambig: true, wantErr: "ambiguous"},
		{name: "dotdot after missing agrees", raw: "/srv/allowed/nope/../real", want: "/srv/allowed/real"},

		// Through /proc, the result would name aegis's process, not the
		// server's: refused however the walk gets there.
		{name: "proc self cwd", raw: "/proc/self/cwd/.ssh/id_rsa", ambig: true, wantErr: "/proc"},
		{name: "proc self root", raw: "/proc/self/root/home/a/.ssh", ambig: true, wantErr: "/proc"},
		{name: "proc file", raw: "/proc/cpuinfo", ambig: true, wantErr: "/proc"},
		{name: "link into proc", raw: "/srv/allowed/cwd/x", ambig: true, wantErr: "/proc"},
		{name: "link into dev fd", raw: "/srv/allowed/fd", ambig: true, wantErr: "/dev/fd"},
		{name: "dev stdout link", raw: "/dev/stdout", ambig: true, wantErr: "/dev/stdout"},
		{name: "dotdot from missing into proc", raw: "/srv/allowed/nope/../../../proc/self/root/home/a/.ssh", ambig: true, wantErr: "/proc"},
		{name: "link climbing from missing into proc", raw: "/srv/allowed/climb", ambig: true, wantErr: "/proc"},
		{name: "dev null", raw: "/dev/null", want: "/dev/null"},

		// Fail closed.
		{name: "loop of two", raw: "/srv/allowed/loop1/x", wantErr: "too many symbolic links"},
		{name: "self loop", raw: "/srv/allowed/self", wantErr: "too many symbolic links"},
		{name: "chain of 40 links is followed", raw: "/c/l0/passwd", fs: chain(40), want: "/etc/passwd"},
		{name: "chain of 41 links is a loop", raw: "/c/l0/passwd", fs: chain(41), wantErr: "too many symbolic links"},
		{name: "empty link target", raw: "/srv/allowed/empty", wantErr: "empty target"},
		{name: "NUL in link target", raw: "/srv/allowed/nul/x", wantErr: "NUL"},
		{name: "link target too long", raw: "/srv/allowed/toolong", wantErr: "long"},
		{name: "permission denied", raw: "/srv/secret/x/y", fs: func() *linkFS {
			f := linkWorld()
			f.errs["/srv/secret/x"] = syscall.EACCES
			return f
		}(), wantErr: "permission denied"},
		{name: "I/O error", raw: "/srv/allowed/real", fs: func() *linkFS {
			f := linkWorld()
			f.errs["/srv/allowed/real"] = syscall.EIO
			return f
		}(), wantErr: "/srv/allowed/real"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := tt.fs
			if f == nil {
				f = linkWorld()
			}
			got, err := CanonPath(tt.raw, &PathOptions{Home: tt.home, Readlink: f.Readlink})
			if tt.ambig && !errors.Is(err, ErrAmbiguous) {
				t.Fatalf("CanonPath(%q) = %q, %v; want an error wrapping ErrAmbiguous", tt.raw, got, err)
			}
			if !tt.ambig && errors.Is(err, ErrAmbiguous) {
				t.Fatalf("CanonPath(%q) error %v wraps ErrAmbiguous, want it not to", tt.raw, err)
			}
			checkPathResult(t, tt.raw, got, err, tt.want, tt.wantErr)
			if f.calls == 0 && !strings.HasPrefix(tt.raw, "/proc/") {
				t.Errorf("CanonPath(%q) never called Readlink", tt.raw)
			}
			if err == nil {
				// Idempotent over the same file system.
				again, err := CanonPath(got, &PathOptions{Readlink: f.Readlink})
				if err != nil || again != got {
					t.Errorf("CanonPath(%q) = %q, %v; want %q (idempotent)", got, again, err, got)
				}
			}
		})
	}
}

// TestCanonPathReadlinkOS checks the fake file system's contract against the
// operating system's: the same tree built with real links in a temporary
// directory, resolved with os.Readlink, and what the kernel does when a
// program writes through the links.
func TestCanonPathReadlinkOS(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(base, "home", "a")
	ssh := filepath.Join(home, ".ssh")
	allowed := filepath.Join(base, "srv", "allowed")
	for _, dir := range []string{ssh, filepath.Join(home, "projects", "app"), allowed, filepath.Join(base, "c")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(ssh, "id_rsa"), []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	links := [][2]string{
		{filepath.Join(allowed, "keys"), ssh},
		{filepath.Join(allowed, "rel"), "../../home/a/.ssh"},
		{filepath.Join(allowed, "dangling"), filepath.Join(ssh, "authorized_keys")},
		{filepath.Join(allowed, "proj"), filepath.Join(home, "projects")},
		{filepath.Join(allowed, "loop1"), "loop2"},
		{filepath.Join(allowed, "loop2"), "loop1"},
		{filepath.Join(home, "link-home"), "."},
	}
	for i := range 41 { // c/l0 -> c/l1 -> ... -> c/l40 -> home: 41 links
		next := "l" + strconv.Itoa(i+1)
		if i == 40 {
			next = home
		}
		links = append(links, [2]string{filepath.Join(base, "c", "l"+strconv.Itoa(i)), next})
	}
	for _, l := range links {
		if err := os.Symlink(l[1], l[0]); err != nil {
			t.Fatal(err)
		}
	}
	opts := &PathOptions{Home: home, Readlink: os.Readlink}

	tests := []struct {
		name    string
		raw     string
		want    string
		wantErr string
		ambig   bool
	}{
		{name: "link to .ssh", raw: allowed + "/keys/id_rsa", want: ssh + "/id_rsa"},
		{name: "relative link", raw: allowed + "/rel/id_rsa", want: ssh + "/id_rsa"},
		{name: "tilde", raw: "~/link-home/.ssh/id_rsa", want: ssh + "/id_rsa"},
		{name: "dangling final link", raw: allowed + "/dangling", want: ssh + "/authorized_keys"},
		{name: "missing tail", raw: allowed + "/new/file", want: allowed + "/new/file"},
		{name: "through a regular file", raw: ssh + "/id_rsa/x", want: ssh + "/id_rsa/x"},
		{name: "dotdot after link", raw: allowed + "/proj/../.ssh/id_rsa", ambig: true, wantErr: ssh + "/id_rsa"},
		{name: "loop", raw: allowed + "/loop1", wantErr: "too many symbolic links"},
		{name: "40 links", raw: base + "/c/l1/.ssh", want: ssh},
		{name: "41 links", raw: base + "/c/l0/.ssh", wantErr: "too many symbolic links"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CanonPath(tt.raw, opts)
			if tt.ambig != errors.Is(err, ErrAmbiguous) {
				t.Fatalf("CanonPath(%q) = %q, %v; want ErrAmbiguous: %v", tt.raw, got, err, tt.ambig)
			}
			checkPathResult(t, tt.raw, got, err, tt.want, tt.wantErr)
		})
	}

	// The kernel agrees: it follows 40 links and refuses the 41st ...
	if _, err := os.Stat(base + "/c/l1/.ssh"); err != nil {
		t.Errorf("stat through 40 links: %v", err)
	}
	if _, err := os.Stat(base + "/c/l0/.ssh"); !errors.Is(err, syscall.ELOOP) {
		t.Errorf("stat through 41 links: %v, want ELOOP", err)
	}
	// ... resolves ".." physically, to the parent of the link's target ...
	if b, err := os.ReadFile(allowed + "/proj/../.ssh/id_rsa"); err != nil || string(b) != "secret" {
		t.Errorf("reading through proj/..: %q, %v; want the key", b, err)
	}
	// ... and writing through a dangling link creates its target.
	if err := os.WriteFile(allowed+"/dangling", []byte("ssh-ed25519 AAAA attacker"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(ssh + "/authorized_keys"); err != nil {
		t.Errorf("writing through the dangling link did not create its target: %v", err)
	}
}

func TestPathUnder(t *testing.T) {
	tests := []struct {
		name      string
		path, dir string
		want      bool
	}{
		{name: "sibling with common prefix", path: "/home/a/.sshx", dir: "/home/a/.ssh", want: false},
		{name: "sibling file with common prefix", path: "/home/a/.ssh_backup/id_rsa", dir: "/home/a/.ssh", want: false},
		{name: "dir itself", path: "/home/a/.ssh", dir: "/home/a/.ssh", want: true},
		{name: "child", path: "/home/a/.ssh/id_rsa", dir: "/home/a/.ssh", want: true},
		{name: "grandchild", path: "/home/a/.ssh/keys/id_rsa", dir: "/home/a/.ssh", want: true},
		{name: "parent is not under child", path: "/home/a", dir: "/home/a/.ssh", want: false},
		{name: "shorter name", path: "/home/ab", dir: "/home/a", want: false},
		{name: "unrelated", path: "/etc/passwd", dir: "/home/a", want: false},
		{name: "root contains everything", path: "/etc/passwd", dir: "/", want: true},
		{name: "root contains itself", path: "/", dir: "/", want: true},
		{name: "root is under nothing else", path: "/", dir: "/home", want: false},
		{name: "dir trailing slash, child", path: "/home/a/.ssh/id_rsa", dir: "/home/a/.ssh/", want: true},
		{name: "dir trailing slash, itself", path: "/home/a/.ssh", dir: "/home/a/.ssh/", want: true},
		{name: "dir trailing slash, sibling", path: "/home/a/.sshx", dir: "/home/a/.ssh/", want: false},
		{name: "path trailing slash", path: "/home/a/.ssh/", dir: "/home/a/.ssh", want: true},
		{name: "both trailing slashes", path: "/home/a/.ssh//", dir: "/home/a/.ssh//", want: true},
		{name: "double slash root", path: "/x", dir: "//", want: true},
		{name: "relative path", path: "home/a/.ssh", dir: "/", want: false},
		{name: "relative dir", path: "/home/a/.ssh", dir: "home/a", want: false},
		{name: "empty path", path: "", dir: "/", want: false},
		{name: "empty dir", path: "/x", dir: "", want: false},
		{name: "backslash is not a separator", path: `/home/a/.ssh\id_rsa`, dir: "/home/a/.ssh", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PathUnder(tt.path, tt.dir); got != tt.want {
				t.Errorf("PathUnder(%q, %q) = %v, want %v", tt.path, tt.dir, got, tt.want)
			}
		})
	}
}

// TestPathUnderCanon checks the rule the policy relies on: whatever spelling
// reaches a file in ~/.ssh, its canonical form is under ~/.ssh.
func TestPathUnderCanon(t *testing.T) {
	f := linkWorld()
	opts := &PathOptions{Home: "/home/a", Readlink: f.Readlink}
	ssh, err := CanonPath("~/.ssh", opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range []string{
		"~/.ssh/id_rsa", "/home/a/projects/../.ssh/id_rsa", "/home/a//.ssh/./id_rsa", "/srv/allowed/keys/id_rsa",
		"/srv/allowed/rel/id_rsa", "/srv/allowed/chain1/x", "/srv/allowed/dangling", "/h/.ssh", "/usr/home/a/.ssh/",
		"/srv/allowed/root/home/a/.ssh/id_rsa", "/../home/a/.ssh",
	} {
		got, err := CanonPath(raw, opts)
		if err != nil {
			t.Errorf("CanonPath(%q): %v", raw, err)
			continue
		}
		if !PathUnder(got, ssh) {
			t.Errorf("CanonPath(%q) = %q, not under %q", raw, got, ssh)
		}
	}
}

func FuzzCanonPath(f *testing.F) {
	for _, s := range []string{
		"~/.ssh/id_rsa", "~", "~/", "~root/x", "~/../a/.ssh", "/home/a/projects/../.ssh/id_rsa",
		"/home/a//.ssh/./id_rsa", "/home/a/.ssh/", "/../../etc/passwd", "", " ", "relative/x", "./x",
		"../x", "a\x00b", "/a\x00", "file:///etc/passwd", "FILE:/etc/passwd", "file:etc", `\\server\share`,
		`/home/a/.ssh\id_rsa`, "/srv/allowed/keys/id_rsa", "/srv/allowed/proj/../.ssh", "/srv/allowed/loop1",
		"/srv/allowed/dangling", "/srv/allowed/dangdeep/x/../y", "/srv/allowed/dot/../../h/.ssh", "/\xff",
		"/proc/self/root/etc/passwd", "/srv/allowed/climb", "/srv/allowed/cwd/x", "/dev/stdout",
	} {
		f.Add(s)
	}
	lexical := &PathOptions{Home: "/home/a"}
	f.Fuzz(func(t *testing.T, raw string) {
		fsys := linkWorld()
		for _, opts := range []*PathOptions{nil, lexical, {Home: "/h", Readlink: fsys.Readlink}} {
			got, err := CanonPath(raw, opts)
			if err != nil {
				if got != "" {
					t.Fatalf("CanonPath(%q) = %q with error %v", raw, got, err)
				}
				continue
			}
			if !path.IsAbs(got) || path.Clean(got) != got {
				t.Fatalf("CanonPath(%q) = %q, not absolute and clean", raw, got)
			}
			if len(got) > maxPathLen || strings.IndexByte(got, 0) >= 0 {
				t.Fatalf("CanonPath(%q) = %q: too long or NUL", raw, got)
			}
			if dir := underProcess(got); dir != "" {
				t.Fatalf("CanonPath(%q) = %q, under %s", raw, got, dir)
			}
			again, err := CanonPath(got, opts)
			if err != nil || again != got {
				t.Fatalf("CanonPath(CanonPath(%q)) = %q, %v; want %q", raw, again, err, got)
			}
			if !PathUnder(got, "/") || !PathUnder(got, got) {
				t.Fatalf("PathUnder(%q, / or itself) = false", got)
			}
			if opts == lexical {
				// Against a naive reference: a stack of components.
				ref := raw
				if rest, ok := strings.CutPrefix(raw, "~/"); ok {
					ref = "/home/a/" + rest
				} else if raw == "~" {
					ref = "/home/a"
				}
				if want := norm.NFC.String(naiveClean(ref)); got != want {
					t.Fatalf("CanonPath(%q) = %q, naive reference %q", raw, got, want)
				}
			}
		}
	})
}

// naiveClean is the lexical reference for FuzzCanonPath: an absolute path
// is a stack of names; "." does nothing and ".." pops, stopping at the root.
func naiveClean(p string) string {
	var stack []string
	for _, name := range strings.Split(p, "/") {
		switch name {
		case "", ".":
		case "..":
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		default:
			stack = append(stack, name)
		}
	}
	return "/" + strings.Join(stack, "/")
}

// BenchmarkCanonPath measures lexical canonicalisation (budget: well under
// 1 µs, no allocation for a clean path) against path.Clean of the same path
// as the reference in the same run, and one resolution through a link.
func BenchmarkCanonPath(b *testing.B) {
	b.Run("reference-path.Clean", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = path.Clean("/home/a/projects/aegis/internal/capability/path.go")
		}
	})
	b.Run("clean", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := CanonPath("/home/a/projects/aegis/internal/capability/path.go", nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("unclean", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := CanonPath("/home/a/projects//aegis/./internal/../internal/capability/", nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("tilde", func(b *testing.B) {
		opts := &PathOptions{Home: "/home/a"}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := CanonPath("~/projects/aegis/internal/capability/path.go", opts); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("symlinks", func(b *testing.B) {
		f := linkWorld()
		opts := &PathOptions{Home: "/home/a", Readlink: f.Readlink}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := CanonPath("/srv/allowed/keys/id_rsa", opts); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// underProcessRef is underProcess as first written, the reference for its
// one-byte shortcut.
func underProcessRef(p string) string {
	for _, dir := range processDirs {
		if PathUnder(p, dir) {
			return dir
		}
	}
	return ""
}

func TestIsClean(t *testing.T) {
	tests := []struct {
		name string
		p    string
		want bool
	}{
		{name: "root", p: "/", want: true},
		{name: "empty", p: "", want: false},
		{name: "plain", p: "/home/a/x.go", want: true},
		{name: "dots in names", p: "/a/.x/..y/.../b.", want: true},
		{name: "double slash", p: "/a//b", want: false},
		{name: "leading double slash", p: "//a", want: false},
		{name: "trailing slash", p: "/a/", want: false},
		{name: "dot", p: "/a/./b", want: false},
		{name: "final dot", p: "/a/.", want: false},
		{name: "dotdot", p: "/a/../b", want: false},
		{name: "final dotdot", p: "/a/..", want: false},
		{name: "dotdot at root", p: "/..", want: false},
		{name: "relative", p: "a/b", want: false},
		{name: "backslash is a byte", p: `/a\..\b`, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := isClean(tt.p); got != tt.want {
				t.Errorf("isClean(%q) = %v, want %v", tt.p, got, tt.want)
			}
			if ref := strings.HasPrefix(tt.p, "/") && path.Clean(tt.p) == tt.p; ref != tt.want {
				t.Errorf("the reference says %v for %q: the table is wrong", ref, tt.p)
			}
		})
	}
}

// FuzzIsClean holds the shortcuts of lexical canonicalisation to their
// references: isClean to path.Clean, underProcess to PathUnder.
func FuzzIsClean(f *testing.F) {
	for _, s := range []string{"/", "", "/a/b", "/a//b", "/a/./b", "/a/../b", "/a/", "/..", "/...", "//", "/proc", "/proc/", "/procx", "/dev/fd/0", "/dev/stdin", "/dev/std", "//proc", "proc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		want := strings.HasPrefix(p, "/") && path.Clean(p) == p
		if got := isClean(p); got != want {
			t.Fatalf("isClean(%q) = %v, path.Clean says %v", p, got, want)
		}
		if got, want := underProcess(p), underProcessRef(p); got != want {
			t.Fatalf("underProcess(%q) = %q, reference %q", p, got, want)
		}
	})
}

// FuzzASCIINoNUL holds the word-at-a-time test to a byte loop.
func FuzzASCIINoNUL(f *testing.F) {
	for _, s := range []string{"", "a", "/home/a/projects/x.go", "/home/a/\x00rojects", "/home/a/projécts", "\x80", "\x01\x7f", "12345678\x00", "1234567\xff9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := true
		for i := 0; i < len(s); i++ {
			if s[i] == 0 || s[i] >= 0x80 {
				want = false
			}
		}
		if got := asciiNoNUL(s); got != want {
			t.Fatalf("asciiNoNUL(%q) = %v, want %v", s, got, want)
		}
		if want && (strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s)) {
			t.Fatalf("%q passes asciiNoNUL but has a NUL or is not UTF-8", s)
		}
	})
}

// TestIsCleanExhaustive checks isClean against path.Clean on every string of
// '/', '.' and 'a' up to 11 bytes: every way slashes and dots can meet,
// across the eight-byte words isClean reads.
func TestIsCleanExhaustive(t *testing.T) {
	const alphabet = "/.a"
	buf := make([]byte, 0, 11)
	var walk func()
	walk = func() {
		p := string(buf)
		want := strings.HasPrefix(p, "/") && path.Clean(p) == p
		if got := isClean(p); got != want {
			t.Fatalf("isClean(%q) = %v, path.Clean says %v", p, got, want)
		}
		if len(buf) == cap(buf) {
			return
		}
		for i := range len(alphabet) {
			buf = append(buf, alphabet[i])
			walk()
			buf = buf[:len(buf)-1]
		}
	}
	walk()
}
