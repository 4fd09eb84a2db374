package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"os"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/aegis-mcp/aegis/internal/binding"
	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/dlp"
	"github.com/aegis-mcp/aegis/internal/egress"
	"github.com/aegis-mcp/aegis/internal/policy"
	"github.com/aegis-mcp/aegis/internal/session"
	"github.com/aegis-mcp/aegis/internal/shape"
)

func newEngine(t testing.TB, mode string) *Engine {
	t.Helper()
	data, err := os.ReadFile("testdata/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if mode != "" {
		data = []byte(strings.Replace(string(data), "version: 1\n", "version: 1\nmode: "+mode+"\n", 1))
	}
	p, err := policy.Parse("testdata/policy.yaml", data, &policy.Options{Home: "/home/u"})
	if err != nil {
		t.Fatal(err)
	}
	b := binding.Builtins()
	// Names resolve from a static table: tests do no DNS.
	gate, err := egress.New(&egress.Config{Resolver: "static", Hosts: map[string][]string{
		"example.com":        {"93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"},
		"api.github.com":     {"140.82.112.5"},
		"rebind.example.net": {"93.184.215.14", "10.0.0.7"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(p, []*Server{
		{Name: "fs", Bindings: b["filesystem"].Tools, Options: binding.Options{Path: capability.PathOptions{Home: "/home/u"}, RequireNFC: true}},
		{Name: "web", Bindings: b["fetch"].Tools, Egress: gate},
		{Name: "misc"},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestCheck(t *testing.T) {
	e := newEngine(t, "")
	tests := []struct {
		name, server, tool, args string
		want                     policy.Effect
		wantReason               string // substring
	}{
		{"allowed read", "fs", "read_file", `{"path":"/home/u/projects/a"}`, policy.Allow, `rule "fs-tools"`},
		{"ssh by tilde", "fs", "read_file", `{"path":"~/.ssh/id_rsa"}`, policy.Deny, `rule "no-ssh"`},
		{"ssh by dotdot", "fs", "read_text_file", `{"path":"/home/u/projects/../.ssh/id_rsa"}`, policy.Deny, `rule "no-ssh"`},
		{"ssh among many", "fs", "read_multiple_files", `{"paths":["/home/u/projects/a","/home/u/.ssh/x"]}`, policy.Deny, `no-ssh`},
		{"outside every grant", "fs", "read_file", `{"path":"/etc/passwd"}`, policy.Deny, `no rule allows fs.read /etc/passwd`},
		{"relative", "fs", "read_file", `{"path":"a"}`, policy.Deny, `argument /path`},
		{"duplicate keys", "fs", "read_file", `{"path":"/home/u/projects/a","path":"/home/u/.ssh/id_rsa"}`, policy.Deny, `duplicate`},
		{"deep nesting", "fs", "read_file", `{"x":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`, policy.Deny, `limit`},
		{"unknown server", "nope", "read_file", `{}`, policy.Deny, `unknown server`},
		{"unbound tool", "fs", "chmod", `{"path":"/home/u/projects/a"}`, policy.Deny, `unbound`},
		{"unbound tool allowed by name", "misc", "now", `{}`, policy.Allow, `unbound-time`},
		{"metadata in hex", "web", "fetch", `{"url":"http://0xA9FEA9FE/"}`, policy.Deny, `no-internal`},
		{"loopback via mapped v6", "web", "fetch", `{"url":"https://[::ffff:127.0.0.1]/"}`, policy.Deny, `no-internal`},
		{"public https", "web", "fetch", `{"url":"https://example.com/x"}`, policy.Allow, ``},
		{"a name resolving to a private address among public ones", "web", "fetch", `{"url":"https://rebind.example.net/x"}`, policy.Deny, `egress denied: rebind.example.net resolves to 10.0.0.7, which is private`},
		{"a name the table does not hold", "web", "fetch", `{"url":"https://unknown.example.org/"}`, policy.Deny, `egress denied`},
		{"file URL to fetch", "web", "fetch", `{"url":"file:///home/u/.ssh/id_rsa"}`, policy.Deny, `no-ssh`},
		{"not arguments at all", "fs", "read_file", ``, policy.Deny, `arguments`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := e.Check(context.Background(), &Call{Server: tt.server, Tool: tt.tool, Arguments: []byte(tt.args)})
			if v.Effect != tt.want {
				t.Fatalf("effect = %s (%s), want %s", v.Effect, v.Reason(), tt.want)
			}
			if !strings.Contains(v.Reason(), tt.wantReason) {
				t.Errorf("reason = %q, want it to contain %q", v.Reason(), tt.wantReason)
			}
			if (v.Arguments == nil) != (tt.want == policy.Deny) {
				t.Errorf("arguments = %q for effect %s: forwarded iff not denied", v.Arguments, v.Effect)
			}
		})
	}
}

// TestShadowLetsThrough: a shadow policy forwards the call and says what it
// would have done.
func TestShadowLetsThrough(t *testing.T) {
	e := newEngine(t, "shadow")
	v := e.Check(context.Background(), &Call{Server: "fs", Tool: "read_file", Arguments: []byte(`{"path":"~/.ssh/id_rsa"}`)})
	if v.Effect != policy.Allow || v.Decision.Would() != policy.Deny || v.Arguments == nil {
		t.Fatalf("shadow: effect %s, would %s, args %q; want allow, would deny, forwarded", v.Effect, v.Decision.Would(), v.Arguments)
	}
	// An argument aegis cannot read is refused even in shadow mode: there
	// is nothing to decide on.
	v = e.Check(context.Background(), &Call{Server: "fs", Tool: "read_file", Arguments: []byte(`{"path":"x"}`)})
	if v.Effect != policy.Deny {
		t.Fatalf("shadow with an unreadable argument: %s, want deny", v.Effect)
	}
}

// FuzzCheckPath checks the engine against a naive reference: whatever the
// path argument, if the engine allows the read then the lexically cleaned
// path — computed here the obvious way — lies in /home/u/projects and not in
// ~/.ssh.
func FuzzCheckPath(f *testing.F) {
	for _, s := range []string{"/home/u/projects/a", "~/.ssh/id_rsa", "/home/u/projects/../.ssh/x", "~/projects/../../u/projects/x", "/home/u/projects/./.././projects/a", "//home//u//projects", "~", "/home/u/projectsx/a"} {
		f.Add(s)
	}
	e := newEngine(f, "")
	f.Fuzz(func(t *testing.T, p string) {
		arg, err := jsonString(p)
		if err != nil {
			return
		}
		v := e.Check(context.Background(), &Call{Server: "fs", Tool: "read_text_file", Arguments: []byte(`{"path":` + arg + `}`)})
		if v.Effect != policy.Allow {
			return
		}
		ref := p
		if ref == "~" || strings.HasPrefix(ref, "~/") {
			ref = "/home/u" + ref[1:]
		}
		ref = path.Clean(ref)
		if !(ref == "/home/u/projects" || strings.HasPrefix(ref, "/home/u/projects/")) || strings.HasPrefix(ref+"/", "/home/u/.ssh/") {
			t.Fatalf("allowed %q, which is %q", p, ref)
		}
	})
}

func jsonString(s string) (string, error) {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte("0123456789abcdef"[r>>4])
			b.WriteByte("0123456789abcdef"[r&15])
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String(), nil
}

// BenchmarkCheck is the whole check of a typical call: decode the
// arguments, derive and canonicalise, decide (DESIGN.md budget: median
// ≤ 3 µs).
func BenchmarkCheck(b *testing.B) {
	e, c := typicalCall(b)
	benchCheckWith(b, e, c)
}

// benchCheckWith times e's check of c, allowed, with one callMem reused
// call after call, as aegis run does.
func benchCheckWith(b *testing.B, e *Engine, c *Call) {
	ctx := context.Background()
	var m callMem
	b.ReportAllocs()
	for b.Loop() {
		if v := checkIn(ctx, e, c, &m); v.Effect != policy.Allow {
			b.Fatal(v.Reason())
		}
	}
}

// typicalCall is BenchmarkCheck's engine and call.
func typicalCall(b testing.TB) (*Engine, *Call) {
	return newEngine(b, ""), &Call{Session: "s", Principal: "alice", Server: "fs", Tool: "read_text_file",
		Arguments: []byte(`{"path":"/home/u/projects/app/internal/server/handler.go","head":40}`)}
}

func BenchmarkCheckURL(b *testing.B) {
	e := newEngine(b, "")
	c := &Call{Server: "web", Tool: "fetch", Arguments: []byte(`{"url":"https://api.github.com/repos/a/b/issues?state=open","max_length":5000}`)}
	benchCheckWith(b, e, c)
}

// readTextFileSchema is server-filesystem's input schema of read_text_file
// (2026.8.31), as it lists it.
const readTextFileSchema = `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"path":{"type":"string"},"tail":{"description":"If provided, returns only the last N lines of the file","type":"number"},"head":{"description":"If provided, returns only the first N lines of the file","type":"number"}},"required":["path"]}`

// BenchmarkCheckAllChecks is BenchmarkCheck with every check of the
// pipeline that applies to the call switched on: the session's state, the
// closed schema with a clamp, templates neutralised in every string, a
// field cleared and one pinned, DLP on the arguments, and caps counted
// (DESIGN.md: the budget holds with all checks on).
func BenchmarkCheckAllChecks(b *testing.B) {
	e, c := allChecksCall(b)
	benchCheckWith(b, e, c)
}

// BenchmarkCheckAllChecksAlloc is BenchmarkCheckAllChecks through Check,
// which allocates each call's storage: the library's plain API.
func BenchmarkCheckAllChecksAlloc(b *testing.B) {
	e, c := allChecksCall(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if v := e.Check(ctx, c); v.Effect != policy.Allow {
			b.Fatal(v.Reason())
		}
	}
}

// allChecksSchema is readTextFileSchema as a server that takes an encoding
// would list it: the pinned field is checked by the closed schema too.
var allChecksSchema = strings.Replace(readTextFileSchema, `"properties":{`, `"properties":{"encoding":{"type":"string"},`, 1)

// allChecksCall is BenchmarkCheckAllChecks's engine and call.
func allChecksCall(b testing.TB) (*Engine, *Call) {
	e := newEngine(b, "")
	fs := e.servers["fs"]
	mustache := shape.Mustache
	fs.Templates = &mustache
	fs.DLP = &DLP{Arguments: dlp.Actions{Default: dlp.ActionDeny}, Results: dlp.Actions{Default: dlp.ActionRedact}}
	fs.Tools = map[string]*Tool{"read_text_file": {
		Clamp: map[string]float64{"/head": 1000},
		Fields: shape.Fields{
			Clear: []args.Pointer{mustPointer(b, "/tail")},
			Set:   []shape.Assign{{Pointer: mustPointer(b, "/encoding"), Value: []byte(`"utf-8"`)}},
		},
		Caps: session.Limits{PerTurn: 1 << 30, PerSession: 1 << 30},
	}}
	e.OpenSession("s", capability.Interactive)
	return e, &Call{Session: "s", Principal: "alice", Server: "fs", Tool: "read_text_file",
		Arguments: []byte(`{"path":"/home/u/projects/app/internal/server/handler.go","head":40}`),
		Schema:    []byte(allChecksSchema), SchemaKey: [32]byte{1}}
}

// BenchmarkCheckInterleaved runs a SHA-256 of 1 KiB, the naive check, the
// whole check and the whole check with every check on (each check with its
// storage reused, as aegis run does, and the last also through Check,
// which allocates it) by turns, 2,000 calls of each per round, so that all
// see the same machine: this 2-core VM's speed for code that allocates or
// reaches beyond its caches wanders over seconds, by up to twice, while
// SHA-256 holds steady. It reports the median of the rounds' times per call
// for each, the fastest round's, and the ratios of the medians.
func BenchmarkCheckInterleaved(b *testing.B) {
	const perRound = 2000
	ctx := context.Background()
	te, tc := typicalCall(b)
	ae, ac := allChecksCall(b)
	raw := []byte(`{"path":"/home/u/projects/app/internal/server/handler.go","head":40}`)
	var tm, am callMem // reused call after call, as aegis run does
	block := make([]byte, 1024)
	var sum [32]byte
	runs := []struct {
		name string
		call func()
		ns   []float64
	}{
		// DESIGN.md's reference figures have SHA-256 at about 1.1 GB/s
		// here, 0.93 us for this kilobyte.
		{name: "sha256-1k", call: func() { sum = sha256.Sum256(block) }},
		{name: "naive", call: func() {
			var m map[string]any
			if err := json.Unmarshal(raw, &m); err != nil {
				b.Fatal(err)
			}
			p, _ := m["path"].(string)
			if !strings.HasPrefix(path.Clean(p)+"/", "/home/u/projects/") {
				b.Fatal("not allowed")
			}
		}},
		{name: "check", call: func() {
			if v := checkIn(ctx, te, tc, &tm); v.Effect != policy.Allow {
				b.Fatal(v.Reason())
			}
		}},
		{name: "allchecks", call: func() {
			if v := checkIn(ctx, ae, ac, &am); v.Effect != policy.Allow {
				b.Fatal(v.Reason())
			}
		}},
		{name: "allchecks-alloc", call: func() {
			if v := ae.Check(ctx, ac); v.Effect != policy.Allow {
				b.Fatal(v.Reason())
			}
		}},
	}
	for i := range runs {
		for range perRound {
			runs[i].call()
		}
	}
	b.ResetTimer()
	for range b.N {
		for i := range runs {
			r := &runs[i]
			start := time.Now()
			for range perRound {
				r.call()
			}
			r.ns = append(r.ns, float64(time.Since(start).Nanoseconds())/perRound)
		}
	}
	b.StopTimer()
	med := map[string]float64{}
	for i := range runs {
		r := &runs[i]
		slices.Sort(r.ns)
		med[r.name] = r.ns[len(r.ns)/2]
		b.ReportMetric(med[r.name], "ns-"+r.name)
		b.ReportMetric(r.ns[0], "ns-min-"+r.name)
		if os.Getenv("AEGIS_BENCH_DIST") != "" {
			q := func(f float64) float64 { return r.ns[int(f*float64(len(r.ns)-1))] }
			b.Logf("%s: p10 %.0f p25 %.0f p50 %.0f p75 %.0f p90 %.0f", r.name, q(.1), q(.25), q(.5), q(.75), q(.9))
		}
	}
	b.ReportMetric(med["allchecks"]/med["check"], "x-allchecks/check")
	b.ReportMetric(med["allchecks"]/med["naive"], "x-allchecks/naive")
	_ = sum
}

// BenchmarkNaiveCheck is the yardstick for BenchmarkCheck, measured in the
// same run: what the least a gateway could do for the same call costs —
// encoding/json into a map, path.Clean and one prefix test.
func BenchmarkNaiveCheck(b *testing.B) {
	raw := []byte(`{"path":"/home/u/projects/app/internal/server/handler.go","head":40}`)
	b.ReportAllocs()
	for b.Loop() {
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			b.Fatal(err)
		}
		p, _ := m["path"].(string)
		if !strings.HasPrefix(path.Clean(p)+"/", "/home/u/projects/") {
			b.Fatal("not allowed")
		}
	}
}

// TestArgsHash: the hash the chain records is of this call's arguments,
// canonical (two spellings hash alike), whatever the engine decided and
// whatever it decoded before.
func TestArgsHash(t *testing.T) {
	e := newEngine(t, "")
	hash := func(server, args string) [32]byte {
		_, h := e.check(context.Background(), &Call{Server: server, Tool: "read_file", Arguments: []byte(args)}, true, new(callMem))
		return h
	}
	a := hash("fs", `{"path":"/home/u/projects/a","head":1}`)
	if b := hash("fs", `{ "head": 1.0e0, "path": "\/home\/u\/projects\/a" }`); a != b {
		t.Error("two spellings of the same arguments hash differently")
	}
	// An unknown server after a call with other arguments: the hash must be
	// of the new arguments, not of what the pooled document held.
	hash("fs", `{"path":"/home/u/projects/a"}`)
	if got, want := hash("nope", `{"x":1}`), hash("fs", `{"x":1}`); got != want {
		t.Error("a refused call's hash is not of its own arguments")
	}
	if raw, canon := hash("fs", `{"n":9007199254740993}`), hash("fs", `{"n":9007199254740992}`); raw == canon {
		t.Error("a number beyond float64 precision collides with its rounding")
	}
	if hash("fs", `not json`) == hash("fs", `not  json`) {
		t.Error("unreadable arguments hash alike")
	}
}

// TestVerdictOwnsItsStrings: Check reads the arguments in place, but what it
// returns must not: a caller reusing its buffer after Check must not change
// the capabilities of the Verdict it holds, shaped or not.
func TestVerdictOwnsItsStrings(t *testing.T) {
	for _, tt := range []struct {
		name string
		tool *Tool
	}{
		{"no edit", nil},
		{"an appended pin", &Tool{Fields: shape.Fields{Set: []shape.Assign{{Pointer: mustPointer(t, "/encoding"), Value: []byte(`"utf-8"`)}}}}},
		{"a cleared field", &Tool{Fields: shape.Fields{Clear: []args.Pointer{mustPointer(t, "/head")}}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEngine(t, "")
			if tt.tool != nil {
				e.servers["fs"].Tools = map[string]*Tool{"read_text_file": tt.tool}
			}
			buf := []byte(`{"path":"/home/u/projects/a.txt","head":1}`)
			v := e.Check(context.Background(), &Call{Server: "fs", Tool: "read_text_file", Arguments: buf})
			if v.Err != nil || len(v.Caps) != 1 {
				t.Fatalf("verdict %v, caps %v", v.Err, v.Caps)
			}
			fwd := string(v.Arguments)
			for i := range buf {
				buf[i] = 'X'
			}
			if got := v.Caps[0].Path; got != "/home/u/projects/a.txt" {
				t.Fatalf("the capability changed with the caller's buffer: %q", got)
			}
			if tt.tool != nil && string(v.Arguments) != fwd {
				t.Fatalf("the shaped arguments changed with the caller's buffer: %s", v.Arguments)
			}
		})
	}
}

// TestExplainDecidesAsCheck: Explain gives the Verdict Check gives (but for
// counting caps): a DLP finding that asks, a refusal from before the policy,
// a denial's arguments withheld.
func TestExplainDecidesAsCheck(t *testing.T) {
	e := newEngine(t, "")
	fs := e.servers["fs"]
	fs.DLP = &DLP{Arguments: dlp.Actions{Default: dlp.ActionAsk}}
	held := &Refusal{Rule: "aegis:held", Err: errors.New("held")}
	for _, tt := range []struct {
		name string
		c    Call
		want policy.Effect
	}{
		{"allowed", Call{Server: "fs", Tool: "read_text_file", Arguments: []byte(`{"path":"/home/u/projects/a"}`)}, policy.Allow},
		{"a secret that asks", Call{Server: "fs", Tool: "read_text_file", Arguments: []byte(`{"path":"/home/u/projects/AKIAQ3EGTV7KPZ4HXW2M"}`)}, policy.Ask},
		{"refused before the policy", Call{Server: "fs", Tool: "read_text_file", Arguments: []byte(`{"path":"/home/u/projects/a"}`), Refuse: held}, policy.Deny},
		{"denied", Call{Server: "fs", Tool: "read_text_file", Arguments: []byte(`{"path":"/home/u/.ssh/id_rsa"}`)}, policy.Deny},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cv := e.Check(context.Background(), &tt.c)
			xv, _ := e.explain(context.Background(), &tt.c)
			if cv.Effect != tt.want || xv.Effect != tt.want {
				t.Fatalf("Check %v, Explain %v, want %v (%s / %s)", cv.Effect, xv.Effect, tt.want, cv.Reason(), xv.Reason())
			}
			if (cv.Arguments == nil) != (xv.Arguments == nil) || RuleOf(&cv) != RuleOf(&xv) {
				t.Fatalf("Check (rule %q, args %s) and Explain (rule %q, args %s) differ", RuleOf(&cv), cv.Arguments, RuleOf(&xv), xv.Arguments)
			}
		})
	}
}

// TestCheckWithReusedMem: one callMem reused call after call gives each call
// the Verdict Check gives it, whatever the call before left in it: shaped
// or not, growing or shrinking, refused or not.
func TestCheckWithReusedMem(t *testing.T) {
	e, _ := allChecksCall(t)
	e.servers["fs"].Tools["read_text_file"].Caps = session.Limits{}
	long := `{"path":"/home/u/projects/` + strings.Repeat("deep/", 60) + `x.go","head":7}`
	calls := []string{
		`{"path":"/home/u/projects/a.go","head":40}`, // the pin appended
		long, // longer than the buffer
		`{"path":"/home/u/projects/b.go","encoding":"latin1"}`, // the model wrote the pinned field
		`{"path":"/home/u/projects/c.go","tail":3}`,            // a cleared field
		`{"path":"/home/u/.ssh/id_rsa"}`,                       // denied
		`{"path":"/home/u/projects/{{x}}.go"}`,                 // templates rewrite
		`{"path":"/home/u/projects/AKIAQ3EGTV7KPZ4HXW2M"}`,     // DLP denies
		`{"path":"/home/u/projects/a.go","Tail":1}`,            // a case variant of a cleared field
		`{"path":"x"`,                      // not JSON
		`{"path":"/home/u/projects/d.go"}`, // shorter again
	}
	ctx := context.Background()
	type seen struct {
		Effect policy.Effect
		Rule   string
		Args   string
		Caps   []string
		Reason string
	}
	look := func(v Verdict) seen {
		s := seen{Effect: v.Effect, Rule: RuleOf(&v), Args: string(v.Arguments), Reason: v.Reason()}
		for _, c := range v.Caps {
			s.Caps = append(s.Caps, string(c.Kind)+" "+c.Path)
		}
		return s
	}
	var m callMem
	for round := range 2 {
		for _, a := range calls {
			c := &Call{Session: "s", Principal: "alice", Server: "fs", Tool: "read_text_file", Arguments: []byte(a),
				Schema: []byte(allChecksSchema), SchemaKey: [32]byte{1}}
			want := look(e.Check(ctx, c))
			got := look(checkIn(ctx, e, c, &m))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("round %d, %s: the pooled check differs from Check (-want +got):\n%s", round, a, diff)
			}
		}
	}
}

// checkIn is the check a Session runs, with m's storage reused call after
// call.
func checkIn(ctx context.Context, e *Engine, c *Call, m *callMem) Verdict {
	v, _ := e.check(ctx, c, false, m)
	return v
}
