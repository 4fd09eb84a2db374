package egressproxy

import (
	"bufio"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

// TestRequests plays testdata/requests.txtar: malformed, ambiguous and
// smuggling requests, each written raw to the proxy. net/http's parser or
// the proxy answers each with the statuses listed, and the denied origin
// receives nothing from any of them.
func TestRequests(t *testing.T) {
	ar, err := txtar.ParseFile("testdata/requests.txtar")
	if err != nil {
		t.Fatal(err)
	}
	allowed := newOrigin(t, "127.0.0.1:0", nil)
	denied := newOrigin(t, "127.0.0.1:0", nil)
	rec := &recorder{}
	_, proxy := startProxy(t, &Config{Checker: loopbackChecker(t, nil), Decide: rec.allowPorts(allowed.port(), 443)}, rec)
	fill := strings.NewReplacer(
		"{allowed}", allowed.addr(), "{denied}", denied.addr(),
		"{allowed-port}", strconv.Itoa(int(allowed.port())), "{denied-port}", strconv.Itoa(int(denied.port())),
	)
	for _, f := range ar.Files {
		t.Run(f.Name, func(t *testing.T) {
			text := fill.Replace(string(f.Data))
			first, req, _ := strings.Cut(text, "\n")
			wantText, ok := strings.CutPrefix(first, "want: ")
			if !ok {
				t.Fatalf("first line %q is not want: STATUS...", first)
			}
			var want []int
			for _, w := range strings.Fields(wantText) {
				n, err := strconv.Atoi(w)
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, n)
			}
			c, err := net.Dial("tcp", proxy)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Write([]byte(strings.ReplaceAll(req, "\n", "\r\n"))); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(c)
			var got []int
			for range want {
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					break // the proxy closed the connection
				}
				body(t, resp)
				got = append(got, resp.StatusCode)
			}
			if fmtInts(got) != fmtInts(want) {
				t.Errorf("statuses %v, want %v", got, want)
			}
		})
	}
	if n := denied.accepted.Load(); n != 0 {
		t.Errorf("the denied origin accepted %d connections", n)
	}
	// The allowed origin saw the Host of the URL, never the one the client
	// wrote, and nothing smuggled.
	for _, r := range allowed.requests() {
		if r.Host != allowed.addr() || r.URL.Path != "/" {
			t.Errorf("allowed origin got %s %s with Host %q", r.Method, r.URL, r.Host)
		}
		if v, ok := r.Header["X-Folded"]; ok && (len(v) != 1 || v[0] != "a b") {
			t.Errorf("the folded header reached the origin as %q", v)
		}
	}
}

// fmtInts writes ns space-separated.
func fmtInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, " ")
}
