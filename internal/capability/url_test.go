package capability

import (
	"encoding/json"
	"math/rand/v2"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func wantConn(scheme, host string, port uint16, addr string, cls Class, url string) Capability {
	c := Capability{Kind: NetConnect, Scheme: scheme, Host: host, Port: port, Classes: cls, URL: url}
	if addr != "" {
		c.Addr = netip.MustParseAddr(addr)
	}
	return c
}

func wantRead(path string) Capability { return Capability{Kind: FSRead, Path: path} }

func TestFromURL(t *testing.T) {
	const lo = "127.0.0.1"
	loop := func(url string) Capability { return wantConn("http", lo, 80, lo, Loopback, url) }
	long := strings.Repeat("a", 300)
	tests := []struct {
		name    string
		in      string
		want    Capability
		wantErr error
	}{
		// Every spelling of 127.0.0.1.
		{"hex short", "http://0x7f.1/", loop("http://127.0.0.1/"), nil},
		{"octal", "http://0177.0.0.1/", loop("http://127.0.0.1/"), nil},
		{"decimal", "http://2130706433/", loop("http://127.0.0.1/"), nil},
		{"short", "http://127.1/", loop("http://127.0.0.1/"), nil},
		{"trailing dot", "http://127.0.0.1./", loop("http://127.0.0.1/"), nil},
		{"hex whole", "http://0x7f000001/", loop("http://127.0.0.1/"), nil},
		{"mixed", "http://0x7f.0.0x0.01/", loop("http://127.0.0.1/"), nil},
		{"zero padded", "http://127.000.000.001/", loop("http://127.0.0.1/"), nil},
		{"fullwidth digits", "http://１２７.０.０.１/", loop("http://127.0.0.1/"), nil},
		{"ideographic full stops", "http://127。0。0。1/", loop("http://127.0.0.1/"), nil},
		{"circled digits", "http://①②⑦.0.0.1/", loop("http://127.0.0.1/"), nil},
		{"encoded non-ascii dot", "http://127.0.0.1%E3%80%82/", loop("http://127.0.0.1/"), nil},
		{"mapped dotted", "http://[::ffff:127.0.0.1]/", loop("http://[::ffff:7f00:1]/"), nil},
		{"mapped hex", "http://[::ffff:7f00:1]/", loop("http://[::ffff:7f00:1]/"), nil},
		{"compatible", "http://[::127.0.0.1]/", wantConn("http", "::7f00:1", 80, "::7f00:1", Embedded|Loopback, "http://[::7f00:1]/"), nil},
		{"nat64", "http://[64:ff9b::7f00:1]/", wantConn("http", "64:ff9b::7f00:1", 80, "64:ff9b::7f00:1", Embedded|Loopback, "http://[64:ff9b::7f00:1]/"), nil},
		{"6to4", "http://[2002:7f00:1::]/", wantConn("http", "2002:7f00:1::", 80, "2002:7f00:1::", Embedded|Loopback, "http://[2002:7f00:1::]/"), nil},
		{"teredo", "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", wantConn("http", "2001:0:4136:e378:8000:63bf:80ff:fffe", 80, "2001:0:4136:e378:8000:63bf:80ff:fffe", Embedded|Loopback, "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/"), nil},
		{"translated", "http://[::ffff:0:127.0.0.1]/", wantConn("http", "::ffff:0:7f00:1", 80, "::ffff:0:7f00:1", Embedded|Loopback, "http://[::ffff:0:7f00:1]/"), nil},
		{"v6 loopback port", "http://[::1]:80/", wantConn("http", "::1", 80, "::1", Loopback, "http://[::1]/"), nil},
		{"v6 zone", "http://[fe80::1%25eth0]/", Capability{}, errWantAny},
		{"v6 zone raw", "http://[fe80::1%eth0]/", Capability{}, errWantAny},
		{"unspecified", "http://0/", wantConn("http", "0.0.0.0", 80, "0.0.0.0", Unspecified, "http://0.0.0.0/"), nil},
		{"v6 unspecified", "http://[::]/", wantConn("http", "::", 80, "::", Unspecified, "http://[::]/"), nil},

		// Metadata endpoints.
		{"metadata v4", "http://169.254.169.254/latest/meta-data/", wantConn("http", "169.254.169.254", 80, "169.254.169.254", LinkLocal|Metadata, "http://169.254.169.254/latest/meta-data/"), nil},
		{"metadata decimal", "http://2852039166/", wantConn("http", "169.254.169.254", 80, "169.254.169.254", LinkLocal|Metadata, "http://169.254.169.254/"), nil},
		{"metadata nat64", "http://[64:ff9b::a9fe:a9fe]/", wantConn("http", "64:ff9b::a9fe:a9fe", 80, "64:ff9b::a9fe:a9fe", Embedded|LinkLocal|Metadata, "http://[64:ff9b::a9fe:a9fe]/"), nil},
		{"metadata aws v6", "http://[fd00:ec2::254]/", wantConn("http", "fd00:ec2::254", 80, "fd00:ec2::254", Private|Metadata, "http://[fd00:ec2::254]/"), nil},
		{"metadata name", "http://metadata.google.internal/computeMetadata/v1/", wantConn("http", "metadata.google.internal", 80, "", Metadata|InternalName, "http://metadata.google.internal/computeMetadata/v1/"), nil},
		{"metadata name upper dot", "http://METADATA.google.internal./", wantConn("http", "metadata.google.internal", 80, "", Metadata|InternalName, "http://metadata.google.internal./"), nil},

		// Names.
		{"fullwidth letters", "http://ｅｘａｍｐｌｅ.com/", wantConn("http", "example.com", 80, "", Public, "http://example.com/"), nil},
		{"upper scheme host default port", "HTTP://X.COM:80/", wantConn("http", "x.com", 80, "", Public, "http://x.com/"), nil},
		{"port leading zeros", "https://x.com:0443/", wantConn("https", "x.com", 443, "", Public, "https://x.com/"), nil},
		{"empty port", "https://x.com:/", wantConn("https", "x.com", 443, "", Public, "https://x.com/"), nil},
		{"explicit port", "https://x.com:8443/a?b=c#frag", wantConn("https", "x.com", 8443, "", Public, "https://x.com:8443/a?b=c"), nil},
		{"a-label", "http://xn--nxasmq6b.com", wantConn("http", "xn--nxasmq6b.com", 80, "", Public, "http://xn--nxasmq6b.com/"), nil},
		{"u-label", "https://bücher.de/", wantConn("https", "xn--bcher-kva.de", 443, "", Public, "https://xn--bcher-kva.de/"), nil},
		{"soft hyphen", "http://exam\u00adple.com/", wantConn("http", "example.com", 80, "", Public, "http://example.com/"), nil},
		{"localhost trailing dot", "http://localhost./", wantConn("http", "localhost", 80, "", Loopback, "http://localhost./"), nil},
		{"sub localhost", "http://a.localhost/", wantConn("http", "a.localhost", 80, "", Loopback, "http://a.localhost/"), nil},
		{"single label", "http://intranet/", wantConn("http", "intranet", 80, "", InternalName, "http://intranet/"), nil},
		{"ws", "ws://x.com/", wantConn("ws", "x.com", 80, "", Public, "ws://x.com/"), nil},
		{"wss", "wss://x.com/", wantConn("wss", "x.com", 443, "", Public, "wss://x.com/"), nil},
		{"ftp", "ftp://x.com/f", wantConn("ftp", "x.com", 21, "", Public, "ftp://x.com/f"), nil},
		{"path normalised", "http://x.com/a/./b/../../c", wantConn("http", "x.com", 80, "", Public, "http://x.com/c"), nil},
		{"path encoded", "http://x.com/a b/{c}", wantConn("http", "x.com", 80, "", Public, "http://x.com/a%20b/%7Bc%7D"), nil},
		{"query kept fragment dropped", "http://x.com/?q=1 2#x", wantConn("http", "x.com", 80, "", Public, "http://x.com/?q=1%202"), nil},

		{"explicit port of another scheme", "http://x.com:443/", wantConn("http", "x.com", 443, "", Public, "http://x.com:443/"), nil},
		{"ftp default port", "ftp://x.com:21/", wantConn("ftp", "x.com", 21, "", Public, "ftp://x.com/"), nil},
		{"address-like public name", "https://10.0.0.1.nip.io/", wantConn("https", "10.0.0.1.nip.io", 443, "", Public, "https://10.0.0.1.nip.io/"), nil},

		// Userinfo never reaches the URL field.
		{"userinfo", "http://user:pass@host/", wantConn("http", "host", 80, "", InternalName, "http://host/"), nil},
		{"userinfo two at signs", "http://a@b@c/", wantConn("http", "c", 80, "", InternalName, "http://c/"), nil},
		{"userinfo hides host", "https://x.com:443@evil.com/", wantConn("https", "evil.com", 443, "", Public, "https://evil.com/"), nil},
		{"userinfo encoded at", "https://u:p%40ss@x.com/", wantConn("https", "x.com", 443, "", Public, "https://x.com/"), nil},
		{"userinfo semicolon", "http://x.com;@evil.com/", wantConn("http", "evil.com", 80, "", Public, "http://evil.com/"), nil},
		{"encoded hash in userinfo", "http://evil.com%23@localhost/", wantConn("http", "localhost", 80, "", Loopback, "http://localhost/"), nil},
		{"encoded slash in userinfo", "http://0x7f.1%2f@evil.com/", wantConn("http", "evil.com", 80, "", Public, "http://evil.com/"), nil},
		{"fragment hides at", "http://evil.com#@127.0.0.1/", wantConn("http", "evil.com", 80, "", Public, "http://evil.com/"), nil},
		{"query hides at", "http://x.com?@evil.com/", wantConn("http", "x.com", 80, "", Public, "http://x.com/?@evil.com/"), nil},

		// Non-special schemes: the opaque host is canonicalised like a special one.
		{"git", "git://github.com/a/b.git", wantConn("git", "github.com", 0, "", Public, "git://github.com/a/b.git"), nil},
		{"redis hex loopback", "redis://0x7f.1:6379/0", wantConn("redis", lo, 6379, lo, Loopback, "redis://0x7f.1:6379/0"), nil},
		{"non-special v6", "foo://[::1]:7/", wantConn("foo", "::1", 7, "::1", Loopback, "foo://[::1]:7/"), nil},

		// Parsers disagree: ErrAmbiguous.
		{"backslash before at", `http://example.com\@evil.com/`, Capability{}, ErrAmbiguous},
		// UTS-46 maps fullwidth "｛" to "{", which the WHATWG host parser
		// keeps and net/url refuses: the canonical URL would be one Go
		// cannot read (found by FuzzFromURL in CI).
		{"fullwidth brace mapped into the host", "http://ｅ｛ａｍｐｌ", Capability{}, ErrAmbiguous},
		{"fullwidth closing brace mapped into the host", "https://ａ｝ｂ.example/", Capability{}, ErrAmbiguous},
		{"backslash in host", `http://evil.com\.example.com`, Capability{}, ErrAmbiguous},
		{"double backslash in host", `http://evil.com\\.example.com`, Capability{}, ErrAmbiguous},
		{"backslash after port", `http://127.0.0.1:80\@evil.com/`, Capability{}, ErrAmbiguous},
		{"backslash authority", `http:\\evil.com\`, Capability{}, ErrAmbiguous},
		{"leading space", "  http://x.com", Capability{}, ErrAmbiguous},
		{"leading c0", "\x01http://x.com/", Capability{}, ErrAmbiguous},
		{"trailing c0", "http://x.com/\x00", Capability{}, ErrAmbiguous},
		{"tab in scheme", "ht\ttp://x.com", Capability{}, ErrAmbiguous},
		{"newline in host", "http://x.com\n.evil", Capability{}, ErrAmbiguous},
		{"tab splits ip", "http://127.0.0.1\tfoo.com/", Capability{}, ErrAmbiguous},
		{"no slashes", "http:host", Capability{}, ErrAmbiguous},
		{"one slash", "http:/host", Capability{}, ErrAmbiguous},
		{"three slashes", "http:///x", Capability{}, ErrAmbiguous},
		{"four slashes", "https:////evil.com/", Capability{}, ErrAmbiguous},
		{"percent-encoded ip", "http://%31%32%37.0.0.1/", Capability{}, ErrAmbiguous},
		{"percent-encoded name", "http://ex%41mple.com/", Capability{}, ErrAmbiguous},
		{"percent-encoded dot", "http://x.com%2e/", Capability{}, ErrAmbiguous},
		{"space in userinfo", "http://1.1.1.1 &@2.2.2.2# @3.3.3.3/", Capability{}, ErrAmbiguous},
		{"bracket in userinfo", "http://[::1]@x.com/", Capability{}, ErrAmbiguous},
		{"file backslash dotdot", `file:///a\..\..\etc\passwd`, Capability{}, ErrAmbiguous},
		{"file no slashes", "file:etc/passwd", Capability{}, ErrAmbiguous},
		{"file drive letter host", "file://C:/x", Capability{}, ErrAmbiguous},
		{"bad path escape", "http://x.com/%zz", Capability{}, ErrAmbiguous},

		// Errors.
		{"no scheme", "//host", Capability{}, errWantAny},
		{"relative", "/x", Capability{}, errWantAny},
		{"empty", "", Capability{}, errWantAny},
		{"port too big", "http://x.com:65536/", Capability{}, errWantAny},
		{"port huge", "http://x.com:99999999999999999999/", Capability{}, errWantAny},
		{"port zero", "http://x.com:0/", Capability{}, errWantAny},
		{"port letters", "http://x.com:8o/", Capability{}, errWantAny},
		{"two ports", "http://x.com:80:81/", Capability{}, errWantAny},
		{"fullwidth port", "http://x.com:８０/", Capability{}, errWantAny},
		{"encoded tab in host", "http://127.0.0.1%09/", Capability{}, errWantAny},
		{"invalid punycode", "http://xn--zz.com/", Capability{}, errWantAny},
		{"zero width joiner", "http://exa\u200dmple.com/", Capability{}, errWantAny},
		{"ipv4 overflow", "http://0x100000000/", Capability{}, errWantAny},
		{"five parts", "http://1.2.3.4.5/", Capability{}, errWantAny},
		{"ends in number", "http://foo.0x7f/", Capability{}, errWantAny},
		{"ends in decimal", "http://foo.1/", Capability{}, errWantAny},
		{"long label", "http://" + long + ".com/", Capability{}, errWantAny},
		{"empty label", "http://a..b/", Capability{}, errWantAny},
		{"two trailing dots", "http://x.com../", Capability{}, errWantAny},
		{"nul in host", "http://x.com%00/", Capability{}, errWantAny},
		{"space in host", "http://ex ample.com/", Capability{}, errWantAny},
		{"v6 unclosed", "http://[::1/", Capability{}, errWantAny},
		{"v6 double brackets", "http://[[::1]]/", Capability{}, errWantAny},
		{"empty host", "http://", Capability{}, errWantAny},
		{"empty host with port", "http://:80/", Capability{}, errWantAny},
		{"userinfo without host", "http://user@/", Capability{}, errWantAny},
		{"data", "data:text/plain,hi", Capability{}, errWantAny},
		{"javascript", "javascript:alert(1)", Capability{}, errWantAny},
		{"mailto", "mailto:a@b.com", Capability{}, errWantAny},
		{"blob", "blob:https://x.com/uuid", Capability{}, errWantAny},
		{"non-special empty host", "foo:///x", Capability{}, errWantAny},
		{"non-special no host", "foo:/x", Capability{}, errWantAny},
		{"non-special bad opaque host", "foo://a%00b/", Capability{}, errWantAny},
		{"invalid utf-8", "http://x.com/\xff", Capability{}, errWantAny},
		{"too long", "http://x.com/" + strings.Repeat("a", maxURLLen), Capability{}, errWantAny},

		// file: URLs name a path on the server.
		{"file", "file:///etc/passwd", wantRead("/etc/passwd"), nil},
		{"file localhost", "file://localhost/etc/passwd", wantRead("/etc/passwd"), nil},
		{"file localhost upper", "file://LOCALHOST/etc/passwd", wantRead("/etc/passwd"), nil},
		{"file one slash", "file:/etc/passwd", wantRead("/etc/passwd"), nil},
		{"file dotdot", "file:///etc/../etc/passwd", wantRead("/etc/passwd"), nil},
		{"file encoded dotdot", "file:///etc/%2e%2E/root/x", wantRead("/root/x"), nil},
		{"file space", "file:///tmp/a%20b", wantRead("/tmp/a b"), nil},
		{"file utf-8", "file:///tmp/%C3%A9", wantRead("/tmp/é"), nil},
		{"file query fragment", "file:///etc/passwd?x#y", wantRead("/etc/passwd"), nil},
		{"file drive letter", "file:///C:/x", Capability{}, errWantAny},
		{"file drive letter pipe", "file:///c|/x", Capability{}, errWantAny},
		{"file drive letter popped", "file:///C::0/%2e%2e/x", Capability{}, errWantAny},
		{"file drive letter later segment", "file:///x/C:/y", wantRead("/x/C:/y"), nil},
		{"file root", "file:///", wantRead("/"), nil},
		{"file remote host", "file://evil/share", Capability{}, errWantAny},
		{"file ip host", "file://127.0.0.1/etc/passwd", Capability{}, errWantAny},
		{"file unc backslashes", `file:\\evil\share`, Capability{}, errWantAny},
		{"file encoded slash", "file:///etc%2Fpasswd", Capability{}, errWantAny},
		{"file encoded dotdot slash", "file:///tmp/..%2F..%2Fetc/passwd", Capability{}, errWantAny},
		{"file encoded backslash", "file:///tmp/a%5Cb", Capability{}, errWantAny},
		{"file encoded nul", "file:///etc/passwd%00.png", Capability{}, errWantAny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FromURL(tt.in)
			checkFromURLTo(t, tt.in, got, err)
			if !checkWantErr(t, err, tt.wantErr) {
				return
			}
			if diff := cmp.Diff(tt.want, got, netipAddrCmp); diff != "" {
				t.Errorf("FromURL(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

// checkFromURLTo fails unless FromURLTo, into a capability holding another
// URL's fields, gives what FromURL gave: want and wantErr.
func checkFromURLTo(t *testing.T, raw string, want Capability, wantErr error) {
	t.Helper()
	got := Capability{Kind: FSWrite, Path: "/stale", Scheme: "ftp", Host: "stale", Port: 21, URL: "ftp://stale/",
		Addr: netip.MustParseAddr("10.0.0.1"), Classes: Private, Program: "x", Argv: []string{"x"}, ID: "stale"}
	err := FromURLTo(&got, raw)
	if (err != nil) != (wantErr != nil) || err != nil && err.Error() != wantErr.Error() {
		t.Fatalf("FromURLTo(%q) error %v, FromURL's %v", raw, err, wantErr)
	}
	if err == nil {
		if diff := cmp.Diff(want, got, netipAddrCmp); diff != "" {
			t.Fatalf("FromURLTo(%q) differs from FromURL (-FromURL +FromURLTo):\n%s", raw, diff)
		}
	}
}

// TestFromURLErrorsHideSecrets checks that an error never repeats the
// userinfo or the query of the URL: errors reach logs.
func TestFromURLErrorsHideSecrets(t *testing.T) {
	for _, in := range []string{
		"http://user:hunter2@x.com:99999/?token=hunter2",
		"http://user:hunter2@x.com\\@evil.com/?token=hunter2",
		"http://user:hunter2@xn--zz.com/?token=hunter2",
		"http://user:hunter2@x.com/%zz?token=hunter2",
	} {
		_, err := FromURL(in)
		if err == nil {
			t.Fatalf("FromURL(%q): no error", in)
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("FromURL(%q) error leaks a secret: %v", in, err)
		}
	}
}

// TestParseWHATWG pins what the WHATWG parser (a runtime such as Node) makes
// of inputs that FromURL refuses as ambiguous, so the refusal is known to be
// a real disagreement.
func TestParseWHATWG(t *testing.T) {
	tests := []struct {
		in, wantHost, wantURL string
	}{
		{`http://example.com\@evil.com/`, "example.com", "http://example.com/@evil.com/"},
		{`http://evil.com\.example.com`, "evil.com", "http://evil.com/.example.com"},
		{"  http://x.com", "x.com", "http://x.com/"},
		{"\x01http://x.com/\x00", "x.com", "http://x.com/"},
		{"ht\ttp://x.com", "x.com", "http://x.com/"},
		{"http://x.com\n.evil", "x.com.evil", "http://x.com.evil/"},
		{"http:host", "host", "http://host/"},
		{"http:/host", "host", "http://host/"},
		{"http:///x", "x", "http://x/"},
		{`http:\\evil.com\`, "evil.com", "http://evil.com/"},
		{"http://%31%32%37.0.0.1/", "127.0.0.1", "http://127.0.0.1/"},
		{"http://[::ffff:127.0.0.1]/", "[::ffff:7f00:1]", "http://[::ffff:7f00:1]/"},
		{"http://user:pass@host:8080/p?q#f", "host", "http://host:8080/p?q"},
		{"file:etc/passwd", "", "file:///etc/passwd"},
		{"file://localhost/etc/passwd", "", "file:///etc/passwd"},
		{"file://C:/x", "", "file:///C:/x"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			u, err := parseURL(tt.in)
			if err != nil {
				t.Fatalf("parseURL(%q): %v", tt.in, err)
			}
			if u.host.text != tt.wantHost || u.url() != tt.wantURL {
				t.Errorf("parseURL(%q) host %q url %q; want %q %q", tt.in, u.host.text, u.url(), tt.wantHost, tt.wantURL)
			}
		})
	}
}

// wptDeviations are web-platform-tests cases where the expected output
// differs from the URL Standard the parser follows.
var wptDeviations = map[string]string{
	"foo://host/ !\"$%&'()*+,-./:;<=>@[\\]^_`{|}~": "the current standard adds ^ to the path percent-encode set; the test data predates it",
	"wss://host/ !\"$%&'()*+,-./:;<=>@[\\]^_`{|}~": "the current standard adds ^ to the path percent-encode set; the test data predates it",
}

// TestParseWHATWGConformance runs the web-platform-tests URL cases without a
// base URL (copied from wpt/url/resources/urltestdata.json, BSD-3-Clause).
func TestParseWHATWGConformance(t *testing.T) {
	data, err := os.ReadFile("testdata/url_wpt_urltestdata.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Input    string
		Failure  bool
		Href     string
		Protocol string
		Username string
		Password string
		Hostname string
		Port     string
		Pathname string
		Search   string
		Hash     string
	}
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 400 {
		t.Fatalf("only %d cases", len(cases))
	}
	for i, c := range cases {
		if why, ok := wptDeviations[c.Input]; ok {
			t.Logf("case %d %q skipped: %s", i, c.Input, why)
			continue
		}
		u, err := parseURL(c.Input)
		if c.Failure {
			if err == nil {
				t.Errorf("case %d: parseURL(%q) = %q, want failure", i, c.Input, u.href())
			}
			continue
		}
		if err != nil {
			t.Errorf("case %d: parseURL(%q): %v, want %q", i, c.Input, err, c.Href)
			continue
		}
		port := ""
		if u.port >= 0 {
			port = strconv.Itoa(u.port)
		}
		got := [...]string{u.href(), u.scheme + ":", u.username, u.password, u.host.text, port, u.pathname(), u.search(), u.hash()}
		want := [...]string{c.Href, c.Protocol, c.Username, c.Password, c.Hostname, c.Port, c.Pathname, c.Search, c.Hash}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("case %d: parseURL(%q) mismatch (-want +got):\n%s", i, c.Input, diff)
		}
	}
}

func FuzzFromURL(f *testing.F) {
	for _, s := range []string{
		"https://api.github.com/repos/a/b?x=1#f", "http://0x7f.1/", "http://[::ffff:127.0.0.1]:8080/",
		"http://user:pass@host/", `http://example.com\@evil.com/`, "http:host", "file:///etc/passwd",
		"file://localhost/etc/passwd", "http://ｅｘａｍｐｌｅ.com/", "http://１２７.０.０.１/",
		"http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", "redis://0x7f.1:6379/0", "git://x/y",
		"http://a@b@c/", "https://x.com:0443/", "data:text/plain,hi", "HTTP://X.COM:80/",
		"http://xn--nxasmq6b.com", "http://%31%32%37.0.0.1/", "ws://[::1]/", "file:///C:/x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		c, err := FromURL(raw)
		checkFromURLTo(t, raw, c, err)
		if err != nil {
			return
		}
		switch c.Kind {
		case FSRead:
			if !strings.HasPrefix(c.Path, "/") || strings.ContainsRune(c.Path, 0) {
				t.Fatalf("FromURL(%q) path %q", raw, c.Path)
			}
			return
		case NetConnect:
		default:
			t.Fatalf("FromURL(%q) kind %v", raw, c.Kind)
		}
		if c.Host == "" || c.Scheme == "" || c.URL == "" || c.Classes == 0 {
			t.Fatalf("FromURL(%q) = %+v: empty field", raw, c)
		}
		if (c.Classes&Public != 0) != (c.Classes == Public) {
			t.Fatalf("FromURL(%q) classes %v", raw, c.Classes)
		}
		host, addr, err := CanonHost(c.Host)
		if err != nil || host != c.Host || addr != c.Addr {
			t.Fatalf("FromURL(%q) host %q: CanonHost = %q %v %v", raw, c.Host, host, addr, err)
		}
		authority, ok := strings.CutPrefix(c.URL, c.Scheme+"://")
		if !ok {
			t.Fatalf("FromURL(%q) URL %q does not start with %s://", raw, c.URL, c.Scheme)
		}
		if i := strings.IndexAny(authority, "/?"); i >= 0 {
			authority = authority[:i]
		}
		if strings.Contains(c.URL, "#") || strings.Contains(authority, "@") {
			t.Fatalf("FromURL(%q) URL %q has a fragment or userinfo", raw, c.URL)
		}
		c2, err := FromURL(c.URL)
		if err != nil {
			t.Fatalf("FromURL(%q).URL = %q, which fails: %v", raw, c.URL, err)
		}
		if c2.Scheme != c.Scheme || c2.Host != c.Host || c2.Port != c.Port || c2.Addr != c.Addr || c2.URL != c.URL {
			t.Fatalf("FromURL(%q) = %+v; FromURL(URL) = %+v", raw, c, c2)
		}
	})
}

// BenchmarkFromURL measures FromURL on typical and unusual URLs, and
// net/url.Parse alone on the first as the reference for ratios: timings on a
// shared machine mean little, ratios in one run do.
func BenchmarkFromURL(b *testing.B) {
	const typical = "https://api.github.com/repos/aegis-mcp/aegis/issues?state=open"
	b.Run("reference=net/url.Parse", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := url.Parse(typical); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, in := range []string{typical, "http://0x7f.1:8080/admin", "https://user:secret@bücher.de/"} {
		b.Run(in, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := FromURL(in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchURL is BenchmarkCheckURL's URL in package gateway.
const benchURL = "https://api.github.com/repos/a/b/issues?state=open"

// BenchmarkFromURLParts times FromURL on benchURL, and its parts: the
// WHATWG parser and net/url's, for a profile of where FromURL's time goes.
func BenchmarkFromURLParts(b *testing.B) {
	b.Run("FromURL", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := FromURL(benchURL); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parseURL", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := parseURL(benchURL); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("net-url", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := url.Parse(benchURL); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestPlainURL checks which URLs take FromURL's fast path, and that the
// fast path derives what the full path does. Every input that is not
// plain must fall back: anything a runtime would rewrite (case, dot
// segments, percent-encoding, tabs, backslashes), anything net/url could
// read otherwise (userinfo, fragments, IP literals, odd ports), anything
// the host parser would map (Punycode, a trailing dot, a final number).
func TestPlainURL(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		plain bool
		want  Capability // for plain inputs
	}{
		{"typical", benchURL, true, wantConn("https", "api.github.com", 443, "", Public, benchURL)},
		{"http", "http://example.org/x", true, wantConn("http", "example.org", 80, "", Public, "http://example.org/x")},
		{"no path", "https://example.org", true, wantConn("https", "example.org", 443, "", Public, "https://example.org/")},
		{"query, no path", "https://example.org?q=1", true, wantConn("https", "example.org", 443, "", Public, "https://example.org/?q=1")},
		{"explicit port", "https://example.org:8443/x", true, wantConn("https", "example.org", 8443, "", Public, "https://example.org:8443/x")},
		{"explicit default port", "https://example.org:443/x", true, wantConn("https", "example.org", 443, "", Public, "https://example.org/x")},
		{"explicit http port", "http://example.org:80", true, wantConn("http", "example.org", 80, "", Public, "http://example.org/")},
		{"internal name", "http://db.internal/x", true, wantConn("http", "db.internal", 80, "", InternalName, "http://db.internal/x")},
		{"single label", "http://intranet/", true, wantConn("http", "intranet", 80, "", InternalName, "http://intranet/")},
		{"localhost", "http://localhost:8080/", true, wantConn("http", "localhost", 8080, "", Loopback, "http://localhost:8080/")},
		{"metadata name", "http://metadata.google.internal/computeMetadata/v1/", true,
			wantConn("http", "metadata.google.internal", 80, "", Metadata|InternalName, "http://metadata.google.internal/computeMetadata/v1/")},
		{"query with percent and slashes", "https://x.com/a?q=a%20b&r=/c/../d", true, wantConn("https", "x.com", 443, "", Public, "https://x.com/a?q=a%20b&r=/c/../d")},
		{"path escapes", "https://x.com/a%20b/%41", true, wantConn("https", "x.com", 443, "", Public, "https://x.com/a%20b/%41")},
		{"dots inside segments", "https://x.com/.well-known/a..b/...", true, wantConn("https", "x.com", 443, "", Public, "https://x.com/.well-known/a..b/...")},
		{"empty segments", "https://x.com//a//", true, wantConn("https", "x.com", 443, "", Public, "https://x.com//a//")},
		{"at in path", "https://x.com/@evil.com", true, wantConn("https", "x.com", 443, "", Public, "https://x.com/@evil.com")},
		{"at in query", "https://x.com?@evil.com", true, wantConn("https", "x.com", 443, "", Public, "https://x.com/?@evil.com")},
		{"hyphens", "https://-a-.b-/", true, wantConn("https", "-a-.b-", 443, "", Public, "https://-a-.b-/")},

		{"long path and query", "https://x.com/abcdefghijklmnop/qrstuvwx?abcdefgh=ijklmnop&q", true,
			wantConn("https", "x.com", 443, "", Public, "https://x.com/abcdefghijklmnop/qrstuvwx?abcdefgh=ijklmnop&q")},
		{"dot segment past eight bytes", "https://x.com/abcdefgh/../x", false, Capability{}},
		{"dot segment at a block's end", "https://x.com/abcdef/./x", false, Capability{}},
		{"encoded dot past eight bytes", "https://x.com/abcdefghij%2e/x", false, Capability{}},
		{"space in the second block", "https://x.com/abcdefghijklm o", false, Capability{}},
		{"backslash in the last byte of a block", "https://x.com/abcdefg\\x", false, Capability{}},
		{"hash in a query block", "https://x.com/?abcdefg#", false, Capability{}},
		{"space in a query's second block", "https://x.com/?abcdefghijklm o", false, Capability{}},
		{"upper-case host", "https://API.github.com/", false, Capability{}},
		{"upper-case scheme", "HTTPS://api.github.com/", false, Capability{}},
		{"trailing dot", "https://x.com./", false, Capability{}},
		{"empty label", "https://x..com/", false, Capability{}},
		{"leading dot", "https://.x.com/", false, Capability{}},
		{"empty host", "https:///x", false, Capability{}},
		{"ends in number", "http://foo.0x7f/", false, Capability{}},
		{"ipv4", "http://127.0.0.1/", false, Capability{}},
		{"short ipv4", "http://127.1/", false, Capability{}},
		{"ipv6", "http://[::1]/", false, Capability{}},
		{"punycode", "http://xn--nxasmq6b.com/", false, Capability{}},
		{"long label", "http://" + strings.Repeat("a", 64) + ".com/", false, Capability{}},
		{"long name", "http://" + strings.Repeat("a.", 127) + "com/", false, Capability{}},
		{"underscore", "http://a_b.com/", false, Capability{}},
		{"userinfo", "https://user@x.com/", false, Capability{}},
		{"userinfo with password", "https://u:p@x.com/", false, Capability{}},
		{"backslash", `http://x.com\@evil.com/`, false, Capability{}},
		{"backslash in path", `http://x.com/a\b`, false, Capability{}},
		{"fragment", "https://x.com/#f", false, Capability{}},
		{"tab", "https://x.com/\ta", false, Capability{}},
		{"newline in host", "https://x.com\n.evil/", false, Capability{}},
		{"leading space", " https://x.com/", false, Capability{}},
		{"trailing space", "https://x.com/ ", false, Capability{}},
		{"space in path", "https://x.com/a b", false, Capability{}},
		{"non-ascii path", "https://x.com/é", false, Capability{}},
		{"non-ascii host", "https://bücher.de/", false, Capability{}},
		{"dot segment", "https://x.com/a/./b", false, Capability{}},
		{"dot dot segment", "https://x.com/a/../b", false, Capability{}},
		{"final dot dot", "https://x.com/a/..", false, Capability{}},
		{"encoded dot", "https://x.com/a/%2e/b", false, Capability{}},
		{"encoded dot upper", "https://x.com/%2E%2E/b", false, Capability{}},
		{"bad escape", "https://x.com/%zz", false, Capability{}},
		{"short escape", "https://x.com/a%4", false, Capability{}},
		{"encoded in host", "https://x%2ecom/", false, Capability{}},
		{"quote in path", `https://x.com/"`, false, Capability{}},
		{"caret in path", "https://x.com/^", false, Capability{}},
		{"brace in path", "https://x.com/{", false, Capability{}},
		{"apostrophe in query", "https://x.com/?a'b", false, Capability{}},
		{"angle in query", "https://x.com/?a<b", false, Capability{}},
		{"port zero", "http://x.com:0/", false, Capability{}},
		{"port leading zero", "http://x.com:0443/", false, Capability{}},
		{"port too big", "http://x.com:65536/", false, Capability{}},
		{"port empty", "http://x.com:/", false, Capability{}},
		{"port letters", "http://x.com:8o/", false, Capability{}},
		{"two ports", "http://x.com:80:81/", false, Capability{}},
		{"one slash", "http:/x.com/", false, Capability{}},
		{"no slashes", "http:x.com/", false, Capability{}},
		{"three slashes", "http:///x.com/", false, Capability{}},
		{"other scheme", "wss://x.com/", false, Capability{}},
		{"file", "file:///etc/passwd", false, Capability{}},
		{"too long", "http://x.com/" + strings.Repeat("a", maxURLLen), false, Capability{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, plain := plainURL(tt.in)
			if plain != tt.plain {
				t.Fatalf("plainURL(%q) plain = %v, want %v", tt.in, plain, tt.plain)
			}
			full, err := fromURL(tt.in)
			if !plain {
				// The full path decides: FromURL must say what it says.
				c, ferr := FromURL(tt.in)
				if (err == nil) != (ferr == nil) || cmp.Diff(full, c, netipAddrCmp) != "" {
					t.Errorf("FromURL(%q) = %+v, %v; the full path says %+v, %v", tt.in, c, ferr, full, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("plainURL accepts %q, which the full path refuses: %v", tt.in, err)
			}
			if diff := cmp.Diff(tt.want, got, netipAddrCmp); diff != "" {
				t.Errorf("plainURL(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
			if diff := cmp.Diff(full, got, netipAddrCmp); diff != "" {
				t.Errorf("plainURL(%q) differs from the full path (-full +plain):\n%s", tt.in, diff)
			}
		})
	}
}

// FuzzPlainURL holds the fast path to the full one: whatever plainURL
// accepts, the full path (the WHATWG parser and net/url's) must accept and
// derive the same capability from.
func FuzzPlainURL(f *testing.F) {
	for _, s := range []string{
		benchURL, "http://x.com", "https://x.com:8443/a?b", "https://x.com:443", "http://a.b/.well-known/%41?q=%zz",
		"https://x.com/a/../b", "https://x.com/%2e", "http://127.1/", "http://x.com./", "https://u@x.com/",
		"https://x.com?a@b", "http://-a-.b-/", "https://x.com//", "http://x.com:0/", "http://foo.0x7f/",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		c, ok := plainURL(raw)
		if !ok {
			return
		}
		full, err := fromURL(raw)
		if err != nil {
			t.Fatalf("plainURL accepts %q, which the full path refuses: %v", raw, err)
		}
		if diff := cmp.Diff(full, c, netipAddrCmp); diff != "" {
			t.Fatalf("plainURL(%q) differs from the full path (-full +plain):\n%s", raw, diff)
		}
	})
}

// TestPlainURLShapes is FuzzPlainURL on URL-shaped random inputs, which a
// byte fuzzer seldom makes: schemes, hosts, ports, paths and queries drawn
// from every ASCII byte and a few others, so that the edges of the plain
// class (each byte it takes or refuses, in each part) are crossed often.
func TestPlainURLShapes(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	pick := func(s ...string) string { return s[r.IntN(len(s))] }
	chars := func(alphabet string, max int) string {
		var b strings.Builder
		for range r.IntN(max + 1) {
			b.WriteByte(alphabet[r.IntN(len(alphabet))])
		}
		return b.String()
	}
	var ascii strings.Builder
	for c := range 128 {
		ascii.WriteByte(byte(c))
	}
	ascii.WriteString("\x80\xff")
	all := ascii.String()
	hostish := "abcxyz0129-.-.AZ_%:@[]"
	pathish := "abc019/./..%2eE%41fz-_~!$&'()*+,;=:@|[]^`{}\"<>\\ #?"
	cleanHost := "abcxyz0129-.-."
	cleanPath := "abc019/./..%2eE%41fz-_~!$&()*+,;=:@|[]`"
	n, plain := 20000, 0
	if testing.Short() {
		n = 2000
	}
	for range n {
		var b strings.Builder
		b.WriteString(pick("http://", "https://", "http://", "https://", "http://", "https://", "HTTP://", "http:/", "https:", "ws://", "http:///"))
		hosts, paths := hostish, pathish
		if r.IntN(2) == 0 {
			hosts, paths = cleanHost, cleanPath
		}
		switch r.IntN(6) {
		case 0:
			b.WriteString(chars(all, 12))
		case 1:
			b.WriteString(pick("127.0.0.1", "127.1", "0x7f.1", "[::1]", "x.0x7f", "xn--nxasmq6b.com", "a.b.", "localhost", "metadata.google.internal"))
		default:
			b.WriteString(chars(hosts, 14))
		}
		if r.IntN(3) == 0 {
			b.WriteString(":" + pick("", "0", "80", "443", "0443", "8080", "65535", "65536", "123456", "8o", chars("0123456789:", 6)))
		}
		if r.IntN(4) != 0 {
			b.WriteString("/" + chars(paths, 16))
		}
		if r.IntN(3) == 0 {
			b.WriteString("?" + chars(paths, 10))
		}
		if r.IntN(8) == 0 {
			b.WriteString(chars(all, 3))
		}
		raw := b.String()
		c, ok := plainURL(raw)
		if !ok {
			continue
		}
		plain++
		full, err := fromURL(raw)
		if err != nil {
			t.Fatalf("plainURL accepts %q, which the full path refuses: %v", raw, err)
		}
		if diff := cmp.Diff(full, c, netipAddrCmp); diff != "" {
			t.Fatalf("plainURL(%q) differs from the full path (-full +plain):\n%s", raw, diff)
		}
	}
	if plain < n/50 {
		t.Errorf("only %d of %d inputs were plain: the generator no longer tests the fast path", plain, n)
	}
	t.Logf("%d of %d inputs were plain, and derived alike", plain, n)
}
