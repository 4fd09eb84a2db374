package capability

import (
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

const testBase = "https://api.example.com/v1/"

// refusedRefs are path arguments that must never be forwarded against
// testBase: each reaches another origin, climbs out of the base path, or
// reads differently to some parser or server. The categories follow the
// ways a URL argument escapes a base (DESIGN.md R14, seed 004).
var refusedRefs = []struct {
	name, ref string
}{
	// Absolute URLs, any scheme, any case.
	{"http", "http://evil.example/x"},
	{"https", "https://evil.example/"},
	{"upper scheme", "HTTP://evil.example/"},
	{"mixed scheme", "hTtPs://evil.example/"},
	{"same origin absolute", "https://api.example.com/v1/users"},
	{"javascript", "javascript:alert(1)"},
	{"javascript encoded newline", "javascript:%0aalert(1)"},
	{"file", "file:///etc/passwd"},
	{"data", "data:text/html,<script>alert(1)</script>"},
	{"mailto", "mailto:a@evil.example"},
	{"ftp", "ftp://evil.example/"},
	{"ws", "ws://evil.example/"},
	{"blob", "blob:https://evil.example/uuid"},
	{"jar", "jar:file:/x!/y"},
	{"custom scheme", "x-custom:payload"},

	// Scheme without slashes: special schemes read "http:host" as a host.
	{"http no slashes", "http:evil.example"},
	{"https no slashes", "https:evil.example/x"},
	{"http one slash", "http:/evil.example"},
	{"http backslashes", `http:\\evil.example`},

	// Scheme-relative and its backslash spellings.
	{"scheme relative", "//evil.example"},
	{"scheme relative path", "//evil.example/x"},
	{"triple slash", "///evil.example"},
	{"quad slash", "////evil.example"},
	{"slash backslash", `/\evil.example`},
	{"backslash slash", `\/evil.example`},
	{"double backslash", `\\evil.example`},
	{"slash backslash slash", `/\/evil.example`},
	{"backslash in path", `users\..\..\admin`},
	{"single backslash", `\evil`},
	{"dot then scheme relative", ".//evil.example"},
	{"empty segment", "users//evil.example"},

	// Leading and trailing whitespace and controls: WHATWG strips them.
	{"leading spaces", "  //evil.example"},
	{"leading tab", "\t//evil.example"},
	{"leading newline backslash", "\n/\\evil.example"},
	{"leading space path", " users"},
	{"trailing space", "users "},
	{"trailing newline", "users\n"},
	{"leading vertical tab", "\v//evil.example"},
	{"leading form feed", "\f//evil.example"},
	{"leading NUL", "\x00//evil.example"},
	{"leading NBSP", "\u00a0//evil.example"},
	{"leading BOM", "\ufeff//evil.example"},
	{"leading line separator", "\u2028//evil.example"},
	{"leading ideographic space", "\u3000//evil.example"},
	{"leading zero width space", "\u200b//evil.example"},
	{"trailing NEL", "users\u0085"},

	// Tabs and newlines inside: WHATWG removes them, "/\t/" becomes "//".
	{"tab between slashes", "/\t/evil.example"},
	{"newline between slashes", "/\n/evil.example"},
	{"CR between slashes", "/\r/evil.example"},
	{"tab in scheme", "ht\ttp://evil.example"},
	{"tab in word", "us\ters"},
	{"NUL inside", "users\x00/x"},
	{"DEL inside", "users\x7f"},
	{"C1 inside", "users\u0085x"},
	{"bidi override", "users/\u202etxt.exe"},
	{"NBSP inside", "users\u00a0x"},

	// Percent-encoded slashes, backslashes and controls a server may decode.
	{"encoded slashes", "%2f%2fevil.example"},
	{"encoded slashes upper", "%2F%2Fevil.example"},
	{"slash encoded slash", "/%2fevil.example"},
	{"encoded backslashes", "%5c%5cevil.example"},
	{"slash encoded backslash", "/%5Cevil.example"},
	{"encoded slash dotdot", "users%2f..%2f..%2fadmin"},
	{"double encoded slash", "%252f%252fevil.example"},
	{"double encoded dots", "%252e%252e/admin"},
	{"encoded percent", "users/%25"},
	{"encoded NUL", "users%00"},
	{"encoded newline", "%0a//evil.example"},
	{"encoded tab", "/%09/evil.example"},
	{"malformed percent", "users%"},
	{"malformed percent hex", "users%zz"},
	{"short percent", "users%2"},

	// Dot segments, every spelling.
	{"dotdot", ".."},
	{"dotdot slash", "../"},
	{"dotdot admin", "../admin"},
	{"climb twice", "users/../../admin"},
	{"climb in absolute", "/v1/../admin"},
	{"inside climb", "users/../profile"},
	{"trailing dotdot", "users/.."},
	{"encoded dotdot", "%2e%2e/admin"},
	{"encoded dotdot upper", "%2E%2E/admin"},
	{"half encoded dotdot", ".%2e/admin"},
	{"half encoded dotdot 2", "%2e./admin"},
	{"tomcat dotdot", "..;/admin"},
	{"tomcat dotdot param", "users/..;x=1/..;/admin"},
	{"triple dot", ".../admin"},
	{"fullwidth dots", "\uff0e\uff0e/admin"},
	{"two dot leader", "\u2025/admin"},
	{"ellipsis", "\u2026/admin"},
	{"encoded overlong dots", "%c0%ae%c0%ae/admin"},
	{"dotdot before query", "..?x=1"},
	{"dotdot before fragment", "..#x"},

	// Userinfo and ports: "base" + "@evil" or ":1" when a server concatenates.
	{"userinfo", "user@evil.example"},
	{"at sign", "@evil.example"},
	{"user pass", "user:pass@evil.example/x"},
	{"colon pass", ":pass@evil.example"},
	{"at in first segment", "a@b/c"},
	{"port", ":8080/x"},
	{"host port", "localhost:8080/x"},
	{"drive letter", `C:\x`},
	{"drive letter slash", "c:/x"},
	{"digit colon", "1:2"},

	// Slash lookalikes that NFKC folds into a slash or backslash.
	{"fullwidth solidus", "\uff0f\uff0fevil.example"},
	{"fullwidth reverse solidus", "\uff3c\uff3cevil.example"},
	{"small reverse solidus", "\ufe68evil.example"},
	{"division slash", "\u2215\u2215evil.example"},

	// Paths outside the base path.
	{"root", "/"},
	{"other root path", "/admin"},
	{"sibling version", "/v2/users"},
	{"base without slash", "/v1"},
	{"prefix not segment", "/v1evil/x"},
	{"case differs", "/V1/users"},

	// Degenerate.
	{"empty", ""},
	{"invalid UTF-8", "users/\xff"},
	{"overlong dot", "users/\xc0\xae\xc0\xae/x"},
	{"huge", strings.Repeat("a", 1<<17)},
}

func TestRelativeURLRefused(t *testing.T) {
	base, err := ParseBaseURL(testBase)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range refusedRefs {
		t.Run(tt.name, func(t *testing.T) {
			got, err := base.Resolve(tt.ref)
			if err == nil {
				t.Fatalf("Resolve(%q) = %q, want an error", tt.ref, got)
			}
			if msg := err.Error(); strings.Contains(msg, "evil") {
				t.Errorf("error repeats the argument: %v", err)
			}
		})
	}
}

func TestRelativeURLAccepted(t *testing.T) {
	tests := []struct {
		name, base, ref, want string
	}{
		{"segment", testBase, "users", "https://api.example.com/v1/users"},
		{"nested", testBase, "users/42", "https://api.example.com/v1/users/42"},
		{"trailing slash", testBase, "users/", "https://api.example.com/v1/users/"},
		{"query", testBase, "users/42?expand=true&x=1", "https://api.example.com/v1/users/42?expand=true&x=1"},
		{"fragment", testBase, "users#top", "https://api.example.com/v1/users#top"},
		{"query only", testBase, "?page=2", "https://api.example.com/v1/?page=2"},
		{"fragment only", testBase, "#frag", "https://api.example.com/v1/#frag"},
		{"dot", testBase, "./users", "https://api.example.com/v1/users"},
		{"inner dot", testBase, "users/./42", "https://api.example.com/v1/users/42"},
		{"encoded dot", testBase, "users/%2e/42", "https://api.example.com/v1/users/42"},
		{"absolute path under base", testBase, "/v1/users", "https://api.example.com/v1/users"},
		{"space", testBase, "search/a b", "https://api.example.com/v1/search/a%20b"},
		{"encoded space", testBase, "search/a%20b", "https://api.example.com/v1/search/a%20b"},
		{"unicode", testBase, "tags/ünï", "https://api.example.com/v1/tags/%C3%BCn%C3%AF"},
		{"colon after slash", testBase, "users/a:b", "https://api.example.com/v1/users/a:b"},
		{"at after slash", testBase, "users/a@b", "https://api.example.com/v1/users/a@b"},
		{"matrix param", testBase, "users;v=1", "https://api.example.com/v1/users;v=1"},
		{"dot file", testBase, ".well-known/x", "https://api.example.com/v1/.well-known/x"},
		{"dots in name", testBase, "files/a..b", "https://api.example.com/v1/files/a..b"},
		{"url in query", testBase, "go?to=https://evil.example/", "https://api.example.com/v1/go?to=https://evil.example/"},
		{"encoded slashes in query", testBase, "go?path=%2F%2Fevil.example", "https://api.example.com/v1/go?path=%2F%2Fevil.example"},
		{"at in query", testBase, "users?email=a@b.example", "https://api.example.com/v1/users?email=a@b.example"},
		{"colon in query", testBase, "users?t=12:00", "https://api.example.com/v1/users?t=12:00"},
		{"dotdot in query", testBase, "files?p=../../etc", "https://api.example.com/v1/files?p=../../etc"},
		{"backslash in query", testBase, `s?q=a\b`, `https://api.example.com/v1/s?q=a\b`},
		{"query quote", testBase, "s?q='x'", "https://api.example.com/v1/s?q=%27x%27"},
		{"base without slash", "https://api.example.com/v1", "users", "https://api.example.com/v1/users"},
		{"base root", "https://api.example.com", "users", "https://api.example.com/users"},
		{"base root absolute", "https://api.example.com/", "/users", "https://api.example.com/users"},
		{"base port", "http://127.0.0.1:8080/api/", "x?y=1", "http://127.0.0.1:8080/api/x?y=1"},
		{"base default port", "https://API.example.com:443/v1/", "x", "https://api.example.com/v1/x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := RelativeURL(tt.ref, tt.base)
			if err != nil {
				t.Fatalf("RelativeURL(%q, %q): %v", tt.ref, tt.base, err)
			}
			if got != tt.want {
				t.Errorf("RelativeURL(%q, %q) = %q, want %q", tt.ref, tt.base, got, tt.want)
			}
			checkUnderBase(t, tt.base, tt.ref, got)
		})
	}
}

func TestParseBaseURL(t *testing.T) {
	tests := []struct {
		name, in, want string // want "" for an error
	}{
		{"plain", "https://api.example.com/v1/", "https://api.example.com/v1/"},
		{"no slash", "https://api.example.com/v1", "https://api.example.com/v1/"},
		{"root", "http://api.example.com", "http://api.example.com/"},
		{"canonical", "HTTPS://API.Example.COM.:443/v1/", "https://api.example.com/v1/"},
		{"relative", "/v1/", ""},
		{"empty", "", ""},
		{"ftp", "ftp://api.example.com/", ""},
		{"javascript", "javascript:alert(1)", ""},
		{"file", "file:///tmp/", ""},
		{"userinfo", "https://user:pw@api.example.com/", ""},
		{"query", "https://api.example.com/v1/?key=x", ""},
		{"empty query", "https://api.example.com/v1/?", ""},
		{"fragment", "https://api.example.com/v1/#x", ""},
		{"whitespace", " https://api.example.com/", ""},
		{"no host", "https:///v1/", ""}, // WHATWG reads host v1, net/url an empty host
		{"backslashes", `https:\\api.example.com\v1\`, ""},
		{"trailing space", "https://api.example.com/ ", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := ParseBaseURL(tt.in)
			if tt.want == "" {
				if err == nil {
					t.Fatalf("ParseBaseURL(%q) = %v, want an error", tt.in, b)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseBaseURL(%q): %v", tt.in, err)
			}
			if got := b.String(); got != tt.want {
				t.Errorf("ParseBaseURL(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// checkUnderBase is the invariant of R14, checked with parsers other than
// the one Resolve uses: the resolved URL has the base's origin and a path
// under the base's path, for Go's net/url reading the result, for Go's
// RFC 3986 resolution of the argument, and for the two ways servers join a
// base and a path by hand.
func checkUnderBase(t *testing.T, base, ref, resolved string) {
	t.Helper()
	b, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	host := strings.ToLower(strings.TrimSuffix(b.Hostname(), "."))
	dir := b.Path
	if !strings.HasSuffix(dir, "/") {
		dir += "/"
	}
	under := func(how string, u *url.URL) {
		t.Helper()
		if strings.ToLower(u.Scheme) != strings.ToLower(b.Scheme) || strings.ToLower(strings.TrimSuffix(u.Hostname(), ".")) != host || u.User != nil {
			t.Errorf("%s: %q leaves the base origin %s://%s (scheme %q, host %q, user %v)", how, ref, b.Scheme, host, u.Scheme, u.Hostname(), u.User)
		}
		if p := u.Port(); p != "" && p != b.Port() && !(b.Port() == "" && (p == "443" || p == "80")) {
			t.Errorf("%s: %q changes the port to %s", how, ref, p)
		}
		if strings.HasPrefix(u.EscapedPath(), "//") {
			t.Errorf("%s: %q resolves to a path that reads as a host: %q", how, ref, u.EscapedPath())
		}
		if !strings.HasPrefix(u.Path+"/", dir) {
			t.Errorf("%s: %q leaves the base path %s: %q", how, ref, dir, u.Path)
		}
		for _, seg := range strings.Split(u.Path, "/") {
			if seg == ".." {
				t.Errorf("%s: %q keeps a .. segment: %q", how, ref, u.Path)
			}
		}
	}
	r, err := url.Parse(resolved)
	if err != nil {
		t.Fatalf("net/url cannot parse the resolved %q: %v", resolved, err)
	}
	under("resolved, read by net/url", r)
	if gr, err := url.Parse(ref); err == nil {
		rr := b.ResolveReference(gr)
		if !(strings.HasPrefix(ref, "/") || strings.HasPrefix(ref, "?") || strings.HasPrefix(ref, "#")) && !strings.HasSuffix(b.Path, "/") {
			// RFC 3986 replaces the last segment of a base without a
			// trailing slash; Resolve treats the base as a directory.
			rr = (&url.URL{Scheme: b.Scheme, Host: b.Host, Path: dir}).ResolveReference(gr)
		}
		under("RFC 3986 resolution by net/url", rr)
	}
	// Servers that join by hand: base + "/" + ref without leading slashes,
	// and plain concatenation onto a base that ends in "/".
	if !strings.HasPrefix(ref, "/") && !strings.HasPrefix(ref, "?") && !strings.HasPrefix(ref, "#") {
		for _, joined := range []string{
			strings.TrimRight(base, "/") + "/" + ref,
			b.Scheme + "://" + b.Host + dir + ref,
		} {
			if j, err := url.Parse(joined); err == nil {
				under("joined by hand", j)
			}
		}
	}
}

// FuzzRelativeURL checks R14's invariant on every input Resolve accepts,
// against several bases: the result keeps the base's origin and stays
// under its path for independent parsers (see checkUnderBase), the
// accepted argument carries nothing a lenient parser strips or folds, and
// resolving the result's own path again gives the same URL.
func FuzzRelativeURL(f *testing.F) {
	for _, tt := range refusedRefs {
		if len(tt.ref) < 256 {
			f.Add(tt.ref, uint8(0))
		}
	}
	for _, s := range []string{"users", "users/42?x=1#y", "?q", "#f", "./a", "/v1/a", "a/./b", "a%20b", "a;b", ".well-known", "a/b:c", "%2e"} {
		f.Add(s, uint8(1))
	}
	bases := []string{testBase, "https://api.example.com/v1", "http://api.example.com", "http://127.0.0.1:8080/a/b/"}
	parsed := make([]*BaseURL, len(bases))
	for i, s := range bases {
		b, err := ParseBaseURL(s)
		if err != nil {
			f.Fatal(err)
		}
		parsed[i] = b
	}
	f.Fuzz(func(t *testing.T, ref string, which uint8) {
		i := int(which) % len(bases)
		got, err := parsed[i].Resolve(ref)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		checkUnderBase(t, bases[i], ref, got)
		if !utf8.ValidString(ref) || strings.ContainsAny(ref, "\t\n\r\x00") {
			t.Errorf("accepted %q, which holds a control or invalid UTF-8", ref)
		}
		path, _, _ := strings.Cut(strings.SplitN(ref, "#", 2)[0], "?")
		if strings.Contains(path, "\\") || strings.Contains(strings.ToLower(path), "%2f") {
			t.Errorf("accepted %q, whose path holds a backslash or an encoded slash", ref)
		}
		first, _, _ := strings.Cut(path, "/")
		if strings.HasPrefix(path, "//") || strings.ContainsAny(first, "@:") {
			t.Errorf("accepted %q, which names an authority, a scheme or a port", ref)
		}
		// The result is a fixed point: its path, resolved again, is itself.
		rest, ok := strings.CutPrefix(got, parsed[i].origin+"/")
		if !ok {
			t.Fatalf("Resolve(%q) = %q, which does not start with the origin %s", ref, got, parsed[i].origin)
		}
		again, err := parsed[i].Resolve("/" + rest)
		if err != nil {
			t.Fatalf("Resolve(%q) = %q, but its path %q is refused: %v", ref, got, "/"+rest, err)
		}
		if again != got {
			t.Errorf("Resolve(%q) = %q, but its path resolves to %q", ref, got, again)
		}
	})
}

func BenchmarkRelativeURL(b *testing.B) {
	base, err := ParseBaseURL(testBase)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := base.Resolve("users/42?expand=true"); err != nil {
			b.Fatal(err)
		}
	}
}
