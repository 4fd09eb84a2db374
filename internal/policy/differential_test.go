package policy

import (
	"fmt"
	"iter"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/difftest"
)

// chooser picks small numbers: from a PRNG in the differential test, from
// the fuzzer's bytes in FuzzDecideIndex.
type chooser func(n int) int

func (c chooser) of(vals ...string) string { return vals[c(len(vals))] }

func randChooser(seed uint64) chooser {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return func(n int) int { return r.IntN(n) }
}

func bytesChooser(data []byte) chooser {
	return func(n int) int {
		if len(data) == 0 {
			return 0
		}
		b := int(data[0])
		data = data[1:]
		return b % n
	}
}

func (c chooser) team() string {
	if c(3) == 0 {
		return c.of("team-1", "team-2", "team-537", "team-10", "team-999")
	}
	return fmt.Sprintf("team-%d", c(1100))
}

func (c chooser) path() string {
	comps := []string{"srv", "projects", "team-1", "team-537", ".env", "home", "a", ".ssh", ".sshx", ".aws",
		"etc", "ssh", "shadow", "tmp", "proc", "sys", "src", "main.go", "x", "..", ".", "", "secrets", "docs", ".git", "shared",
		// Other spellings (DESIGN.md R34): case, normalisation twins, a
		// sharp s and an ignorable joiner.
		"HOME", ".SSH", "Projects", "cafe\u0301", "caf\u00e9", "cre\u0300me", "STRASSE", "stra\u00dfe", "ho\u200cme", "\u212aeep", "r\u00e9sum\u00e9", "NAR", "nar"}
	var b strings.Builder
	if c(10) != 0 {
		b.WriteByte('/')
	}
	n := c(6)
	for i := range n {
		if i > 0 {
			b.WriteByte('/')
		}
		if c(4) == 0 {
			b.WriteString(c.team())
		} else {
			b.WriteString(comps[c(len(comps))])
		}
	}
	if c(12) == 0 {
		b.WriteByte('/')
	}
	if c(40) == 0 {
		b.WriteByte(0)
	}
	return b.String()
}

func (c chooser) capability() capability.Capability {
	switch c(12) {
	case 0, 1, 2:
		if c(3) == 0 {
			return tree(fsRead(c.path()))
		}
		return fsRead(c.path())
	case 3, 4:
		if c(3) == 0 {
			return tree(fsWrite(c.path()))
		}
		return fsWrite(c.path())
	case 5, 6, 7:
		host := c.of("api.github.com", "github.com", "raw.githubusercontent.com", "githubusercontent.com", "api-3.example.com",
			"a.svc-7.example.net", "svc-7.example.net", "x.example.com", "a.b.example.com", "example.com", "pypi.org", "docs.python.org",
			"10.1.2.3", "172.20.0.1", "192.168.1.1", "169.254.169.254", "127.0.0.1", "::1", "64:ff9b::c0a8:101", "2002:c0a8:101::1",
			"64:ff9b::a01:203", "fe80::1", "metadata.google.internal", "intranet", "", "x.readthedocs.io", "a.example")
		cp := netTo(c.of("https", "http", "ftp", "", "telnet", "gopher"), host, []uint16{0, 22, 23, 25, 80, 443, 465, 8080, 8443, 8000, 8100, 8101}[c(12)], 0)
		switch {
		case host == "169.254.169.254" || host == "metadata.google.internal":
			cp.Classes = capability.Metadata | capability.LinkLocal
		case strings.HasPrefix(host, "10.") || strings.HasPrefix(host, "192.168.") || strings.HasPrefix(host, "172."):
			cp.Classes = capability.Private
		case host == "127.0.0.1" || host == "::1":
			cp.Classes = capability.Loopback
		case host == "intranet":
			cp.Classes = capability.InternalName
		case strings.Contains(host, ":"):
			cp.Classes = capability.Embedded
		default:
			cp.Classes = capability.Public
		}
		if c(8) == 0 {
			cp.Classes = capability.Class(1 << c(14))
		}
		return cp
	case 8, 9:
		if c(4) == 0 {
			return shellOf(c.of("ls | wc", "curl x | sh", "make && make install"))
		}
		return execOf(c.of("git", "/usr/bin/git", "curl", "/usr/bin/curl", "/usr/local/go/bin/go", "/usr/local/go/bin/sub/go",
			"/usr/local/bin/node", "make", "rm", "sudo", "/tmp/git", "ls", "x", "y"), c.of("a", "x", "y", "z", "status"))
	case 10:
		return idOf(c.of("mail.message", "mail.thread", "calendar.event", "x", ""), c.of("00ff", "m1", "../x", ""))
	}
	if c(2) == 0 {
		return capability.Capability{Kind: capability.Kind(c(8)), Path: "/home/a"}
	}
	return capability.Capability{Kind: capability.Exec}
}

func (c chooser) request() *Request {
	r := &Request{
		Server:    c.of("fs", "fetch", "git", "shell", "mail", "db", "calendar", "browser", "legacy", "slack", "sh", "misc", "web", "x", ""),
		Tool:      c.of("read_file", "list_directory", "write_file", "edit_file", "fetch", "git_push", "git_status", "run_command", "run", "delete_x", "drop_table", "admin_users", "deploy", "query", "list_events", "navigate", "post_message", "read_channel", "t", "", "read_", "time", "send"),
		Principal: c.of("alice", "bob", "carol", "dba", "mallory", "dave", "eve", ""),
		Origin:    capability.Origin(c(4)),
		Taint:     c(3) == 0,
		Bound:     c(5) != 0,
		Tier:      capability.Tier(c(5)),
	}
	for range c(4) {
		if c(2) == 0 {
			r.Roles = append(r.Roles, c.team())
		} else {
			r.Roles = append(r.Roles, c.of("dev", "ops", "analyst", "research", "qa", "team-1"))
		}
	}
	for range c(7) {
		r.Caps = append(r.Caps, c.capability())
	}
	r.FoldCase = c(4) == 0
	return r
}

var differentialPolicies = []string{"bench_1100.yaml", "bench_10.yaml", "matchers.yaml", "cel.yaml", "shadow.yaml", "shadow-policy.yaml", "subtree.yaml",
	"spelling.yaml", "subtree-spelling.yaml"}

// decideTwin holds the indexed Decide of s to referenceDecide, which scans
// every rule.
func decideTwin(name string, s *Set) *difftest.Twin[*Request, outcome] {
	return &difftest.Twin[*Request, outcome]{
		Name: "Decide on " + name,
		Fast: func(r *Request) outcome { return outcomeOf(s.Decide(r)) },
		Ref:  func(r *Request) outcome { return referenceDecide(s, r) },
	}
}

// requests yields n requests c makes.
func (c chooser) requests(n int) iter.Seq[*Request] {
	return func(yield func(*Request) bool) {
		for range n {
			if !yield(c.request()) {
				return
			}
		}
	}
}

// TestDifferential checks the indexed Decide against the naive reference
// on random calls.
func TestDifferential(t *testing.T) {
	for _, name := range differentialPolicies {
		// The reference scans every rule for every target: keep the
		// large policy's share small enough for -race.
		n := 5000
		if name == "bench_1100.yaml" {
			n = 800
		}
		if testing.Short() {
			n /= 10
		}
		decideTwin(name, fixture(t, name)).Agree(t, randChooser(uint64(len(name))).requests(n))
	}
}

func FuzzDecideIndex(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte("\x00\x00\x00\x00\x01\x01\x03\x05\x00\x06\x06\x00\x01\x02\x03\x04"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		name := differentialPolicies[int(data[0])%len(differentialPolicies)]
		s := fixture(t, name)
		r := bytesChooser(data[1:]).request()
		decideTwin(name, s).Check(t, r)
		// Reasons never panic and always say something.
		d := s.Decide(r)
		if d.Reason() == "" {
			t.Fatal("empty reason")
		}
		_ = d.ShadowReason()
		_ = s.Explain(r).String()
	})
}

// FuzzDecidePath checks the path index against the naive reference on
// any path: every length around the eight-byte words the walk reads, NULs,
// dots, slashes and bytes anywhere, under the directories of the fixtures.
func FuzzDecidePath(f *testing.F) {
	for _, p := range []string{
		"/srv/projects/team-537/src/main.go", "/", "", "srv", "/srv/", "//srv", "/srv//projects", "/srv/./projects",
		"/srv/projects/team-537/..", "/srv/projects/team-537/.", "/srv/projects/team-537/...", "/home/a/.ssh",
		"/home/a/.sshx", "/home/a/.ssh/id_rsa", "/home/a\x00/.ssh", "/etc/shadow\x00", "/a", "/abcdefg", "/abcdefgh",
		"/abcdefghijklmno", "/srv/projects/team-1/.env", "/srv/projects/team-1/.env/x", "/proc/self/environ",
		"/HOME/A", "/Srv/Projects", "/home/a/cafe\u0301", "/home/a/cr\u00e8me", "/home/a/STRASSE", "/ho\u200cme",
	} {
		f.Add(p, uint8(0))
		f.Add(p, uint8(0x80|len(differentialPolicies)-1))
	}
	f.Fuzz(func(t *testing.T, p string, which uint8) {
		// The high bit of which puts the server on a case-insensitive
		// volume.
		name := differentialPolicies[int(which&0x7f)%len(differentialPolicies)]
		s := fixture(t, name)
		r := benchRequest()
		r.FoldCase = which&0x80 != 0
		r.Caps = caps(fsRead(p), fsWrite(p), tree(fsRead(p)), tree(fsWrite(p)))
		decideTwin(name, s).Check(t, r)
	})
}

// TestDecidePathShapes is FuzzDecidePath on random paths built from the
// fixtures' directories and the bytes that matter to the walk (slashes,
// dots, NULs), at every length from 0 to 48.
func TestDecidePathShapes(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	starts := []string{"", "/", "/srv/projects/team-537", "/srv/projects/team-1", "/home/a/.ssh", "/home/a", "/etc/ssh", "/proc", "/srv/projects/.env"}
	const alphabet = "//..ab7\x00-"
	n := 4000
	if testing.Short() {
		n = 400
	}
	for _, name := range []string{"bench_1100.yaml", "bench_10.yaml", "matchers.yaml", "subtree.yaml"} {
		paths := func(yield func(*Request) bool) {
			for range n {
				b := []byte(starts[r.IntN(len(starts))])
				for size := r.IntN(49); len(b) < size; {
					b = append(b, alphabet[r.IntN(len(alphabet))])
				}
				req := benchRequest()
				req.Caps = caps(fsRead(string(b)), tree(fsWrite(string(b))))
				if !yield(req) {
					return
				}
			}
		}
		decideTwin(name, fixture(t, name)).Agree(t, paths)
	}
}
