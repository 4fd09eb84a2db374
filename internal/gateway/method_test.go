package gateway

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aegis-mcp/aegis/internal/binding"
	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/policy"
	"github.com/aegis-mcp/aegis/internal/record"
)

// methodSession is a session over methods-policy.yaml, recording into a
// memLog, whose server binds the prompt "show" (its /file argument is a
// path read) and lists the method x/custom.
func methodSession(t *testing.T) (*Session, *memLog) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", "methods-policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Parse("methods-policy.yaml", src, nil)
	if err != nil {
		t.Fatal(err)
	}
	show := &binding.Binding{Tool: "show", Tier: capability.TierDataRead, Args: []binding.Arg{{Pointer: constPointer("/file"), Kind: capability.FSRead}}}
	e, err := New(p, []*Server{{
		Name:    "s",
		Options: binding.Options{Path: capability.PathOptions{Home: "/home/u"}},
		Prompts: binding.Table{"show": show},
		Methods: map[string]*Tool{"x/custom": {}},
	}}, &Options{Protected: []string{"/home/u/.local/state/aegis"}})
	if err != nil {
		t.Fatal(err)
	}
	log := &memLog{}
	s, err := e.NewSession(&SessionConfig{Server: "s", ID: "sess", Principal: "p", Origin: capability.Interactive, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	return s, log
}

// TestRequestMethods: every method is decided by the policy and recorded,
// with what it names and the capabilities it derives; a capability rule
// stops a method as it stops a tool.
func TestRequestMethods(t *testing.T) {
	tests := []struct {
		name, method, params string
		effect               policy.Effect
		rules                []string
		tool                 string
		caps                 []record.Cap
	}{
		{"read a file resource", "resources/read", `{"uri":"file:///srv/a.txt"}`, policy.Allow, []string{"resources", "srv"},
			"file:///srv/a.txt", []record.Cap{{Kind: "fs.read", Path: "/srv/a.txt"}}},
		{"read a denied file resource", "resources/read", `{"uri":"file:///home/u/.ssh/id_rsa"}`, policy.Deny, []string{"resources", "no-ssh"},
			"file:///home/u/.ssh/id_rsa", []record.Cap{{Kind: "fs.read", Path: "/home/u/.ssh/id_rsa"}}},
		{"file URI in capitals, with a dot-dot", "resources/read", `{"uri":"FILE:///srv/../home/u/.ssh/id_rsa"}`, policy.Deny, []string{"resources", "no-ssh"},
			"FILE:///srv/../home/u/.ssh/id_rsa", []record.Cap{{Kind: "fs.read", Path: "/home/u/.ssh/id_rsa"}}},
		{"file URI with a leading space", "resources/read", `{"uri":" file:///home/u/.ssh/id_rsa"}`, policy.Deny, []string{RuleUndecidable},
			" file:///home/u/.ssh/id_rsa", []record.Cap{}},
		{"subscribe to a denied file", "resources/subscribe", `{"uri":"file:///home/u/.ssh/id_rsa"}`, policy.Deny, []string{"resources", "no-ssh"},
			"file:///home/u/.ssh/id_rsa", []record.Cap{{Kind: "fs.read", Path: "/home/u/.ssh/id_rsa"}}},
		{"aegis's own state", "resources/read", `{"uri":"file:///home/u/.local/state/aegis/chain/s/chain.key"}`, policy.Deny, []string{RuleSelf},
			"file:///home/u/.local/state/aegis/chain/s/chain.key", []record.Cap{{Kind: "fs.read", Path: "/home/u/.local/state/aegis/chain/s/chain.key"}}},
		{"web resource allowed", "resources/read", `{"uri":"https://93.184.216.34/x"}`, policy.Allow, []string{"resources", "web"},
			"https://93.184.216.34/x", []record.Cap{{Kind: "net.connect", Scheme: "https", Host: "93.184.216.34", Port: 443, URL: "https://93.184.216.34/x"}}},
		{"web resource to another host", "resources/read", `{"uri":"http://10.0.0.1/latest"}`, policy.Deny, []string{"resources"},
			"http://10.0.0.1/latest", []record.Cap{{Kind: "net.connect", Scheme: "http", Host: "10.0.0.1", Port: 80, URL: "http://10.0.0.1/latest"}}},
		{"a server's own scheme", "resources/read", `{"uri":"memo://insights"}`, policy.Allow, []string{"resources"}, "memo://insights", []record.Cap{}},
		{"uri not a string", "resources/read", `{"uri":7}`, policy.Deny, []string{RuleUndecidable}, "", []record.Cap{}},
		{"unbound prompt", "prompts/get", `{"name":"greet","arguments":{"who":"x"}}`, policy.Allow, []string{"prompts"}, "greet", []record.Cap{}},
		{"bound prompt, allowed path", "prompts/get", `{"name":"show","arguments":{"file":"/srv/x"}}`, policy.Allow, []string{"bound-prompts", "srv"},
			"show", []record.Cap{{Kind: "fs.read", Path: "/srv/x"}}},
		{"bound prompt, denied path", "prompts/get", `{"name":"show","arguments":{"file":"~/.ssh/id_rsa"}}`, policy.Deny, []string{"bound-prompts", "no-ssh"},
			"show", []record.Cap{{Kind: "fs.read", Path: "/home/u/.ssh/id_rsa"}}},
		{"completing a bound prompt's path", "completion/complete",
			`{"ref":{"type":"ref/prompt","name":"show"},"argument":{"name":"file","value":"/home/u/.ssh/"}}`, policy.Deny, []string{"completions", "no-ssh"},
			"show", []record.Cap{{Kind: "fs.read", Path: "/home/u/.ssh"}}},
		{"completing with context", "completion/complete",
			`{"ref":{"type":"ref/prompt","name":"show"},"argument":{"name":"other","value":"v"},"context":{"arguments":{"file":"/srv/y"}}}`, policy.Allow, []string{"completions", "srv"},
			"show", []record.Cap{{Kind: "fs.read", Path: "/srv/y"}}},
		{"completing an unbound prompt", "completion/complete",
			`{"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"who","value":"a"}}`, policy.Allow, []string{"completions-unbound"}, "greet", []record.Cap{}},
		{"completing a resource template", "completion/complete",
			`{"ref":{"type":"ref/resource","uri":"file:///srv/{name}"},"argument":{"name":"name","value":"a"}}`, policy.Allow, []string{"completions"}, "file:///srv/{name}", []record.Cap{}},
		{"roots", "roots/list", ``, policy.Allow, []string{"roots"}, "", []record.Cap{}},
		{"sampling", "sampling/createMessage", `{"messages":[],"maxTokens":5}`, policy.Deny, []string{"no-sampling"}, "", []record.Cap{}},
		{"elicitation, no rule", "elicitation/create", `{"message":"m","requestedSchema":{"type":"object"}}`, policy.Deny, nil, "", []record.Cap{}},
		{"a configured method", "x/custom", `{}`, policy.Allow, []string{"custom"}, "", []record.Cap{}},
		{"an unknown method", "x/unknown", `{}`, policy.Deny, []string{RuleMethod}, "", []record.Cap{}},
		{"a server's method sent by the client", "client:roots/list", ``, policy.Deny, []string{RuleMethod}, "", []record.Cap{}},
		{"a client's method sent by the server", "server:resources/read", `{"uri":"file:///srv/a"}`, policy.Deny, []string{RuleMethod}, "file:///srv/a", []record.Cap{{Kind: "fs.read", Path: "/srv/a"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, log := methodSession(t)
			// The direction is the method's own, unless the case says.
			method, fromServer := tt.method, false
			if m, ok := strings.CutPrefix(method, "client:"); ok {
				method = m
			} else if m, ok := strings.CutPrefix(method, "server:"); ok {
				method, fromServer = m, true
			} else {
				known, _ := DecidedMethod(method)
				fromServer = known.FromServer
			}
			tt.method = method
			request := s.Request
			if fromServer {
				request = s.ServerRequest
			}
			out, err := request(context.Background(), method, []byte(tt.params))
			if err != nil {
				t.Fatal(err)
			}
			if out.Effect != tt.effect || out.Forward != (tt.effect == policy.Allow) {
				t.Errorf("effect %s (forward %v), want %s; reason %q", out.Effect, out.Forward, tt.effect, out.Reason)
			}
			if len(log.entries) != 1 {
				t.Fatalf("%d entries recorded, want 1", len(log.entries))
			}
			ent := log.entries[0]
			if ent.Method != tt.method || ent.Tool != tt.tool {
				t.Errorf("recorded method %q tool %q, want %q %q", ent.Method, ent.Tool, tt.method, tt.tool)
			}
			if diff := cmp.Diff(tt.rules, ent.Rules); diff != "" {
				t.Errorf("rules (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.caps, ent.Caps); diff != "" {
				t.Errorf("caps (-want +got):\n%s", diff)
			}
			if !out.Forward && !strings.Contains(out.Reason, "aegis") {
				t.Errorf("reason %q", out.Reason)
			}
		})
	}
}

// TestRequestOfToolsCall: tools/call goes through Call, never Request.
func TestRequestOfToolsCall(t *testing.T) {
	s, _ := methodSession(t)
	if _, err := s.Request(context.Background(), "tools/call", []byte(`{"name":"x"}`)); err == nil {
		t.Error("Request of tools/call succeeded")
	}
}

// TestRequestResultTaints: the result of a method configured untrusted
// taints the session, and its secrets are redacted like a tool's.
func TestRequestResultTaints(t *testing.T) {
	s, _ := methodSession(t)
	s.srv.Methods["resources/read"] = &Tool{Untrusted: true}
	ctx := context.Background()
	if _, err := s.RequestResult(ctx, "resources/read", []byte(`{"uri":"https://example.com/x"}`), []byte(`{"contents":[]}`)); err != nil {
		t.Fatal(err)
	}
	if _, tainted, _ := s.eng.sessions.State("sess"); !tainted {
		t.Error("an untrusted method's result did not taint the session")
	}
}

// TestRelativePathsAgainstBases: a relative path is resolved against the
// server's allowed directories, as the server does, and decided like the
// absolute path it names; once the client was let to answer the server's
// roots/list, the server's directories are the client's roots, which
// aegis does not follow, and a relative path is refused.
func TestRelativePathsAgainstBases(t *testing.T) {
	s, log := methodSession(t)
	s.srv.Bindings = binding.Builtins()["filesystem"].Tools
	s.srv.Options.Path.Bases = []string{"/srv", "/home/u"}
	ctx := context.Background()
	for _, tt := range []struct {
		path  string
		allow bool
		cap   string
	}{
		{"notes.txt", true, "/srv/notes.txt"},
		{"../home/u/.ssh/id_rsa", false, "/home/u/.ssh/id_rsa"},
		{".ssh/id_rsa", true, "/srv/.ssh/id_rsa"}, // under the first directory, which the server picks
		{"../../etc/passwd", false, "/etc/passwd"},
	} {
		out, err := s.Call(ctx, "read_text_file", []byte(`{"path":"`+tt.path+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		ent := log.entries[len(log.entries)-1]
		if out.Forward != tt.allow || len(ent.Caps) != 1 || ent.Caps[0].Path != tt.cap {
			t.Errorf("%s: forward %v (%s), caps %v; want %v, %s", tt.path, out.Forward, out.Reason, ent.Caps, tt.allow, tt.cap)
		}
	}
	if out, err := s.ServerRequest(ctx, "roots/list", nil); err != nil || !out.Forward {
		t.Fatalf("roots/list: %+v, %v", out, err)
	}
	out, err := s.Call(ctx, "read_text_file", []byte(`{"path":"notes.txt"}`))
	if err != nil {
		t.Fatal(err)
	}
	if out.Forward || !strings.Contains(out.Reason, "not absolute") {
		t.Errorf("after roots/list: forward %v, reason %q; want a refusal of the relative path", out.Forward, out.Reason)
	}
}

// TestConnect: a sandboxed server's own connection is the action
// egress/connect with its capability, decided by the policy's rules and
// recorded; a peer cannot send the method itself.
func TestConnect(t *testing.T) {
	src := "version: 1\nrules:\n" +
		"  - {id: own, effect: allow, server: s, method: egress/connect}\n" +
		"  - {id: api, effect: allow, host: [api.example.com], port: [443]}\n" +
		"  - {id: no-meta, effect: deny, host: [\"class:metadata\"]}\n"
	s, log := recordingSession(t, src)
	ctx := context.Background()
	for _, tt := range []struct {
		c     capability.Capability
		allow bool
		rules []string
	}{
		{capability.Capability{Kind: capability.NetConnect, Scheme: "https", Host: "api.example.com", Port: 443}, true, []string{"own", "api"}},
		{capability.Capability{Kind: capability.NetConnect, Scheme: "https", Host: "other.example.com", Port: 443}, false, []string{"own"}},
		{capability.Capability{Kind: capability.NetConnect, Scheme: "http", Host: "169.254.169.254", Port: 80, Classes: capability.Metadata | capability.LinkLocal}, false, []string{"own", "no-meta"}},
	} {
		out, err := s.Connect(ctx, tt.c)
		if err != nil {
			t.Fatal(err)
		}
		ent := log.entries[len(log.entries)-1]
		if out.Forward != tt.allow || ent.Method != MethodConnect || !slices.Equal(ent.Rules, tt.rules) || len(ent.Caps) != 1 || ent.Caps[0].Host != tt.c.Host {
			t.Errorf("%s: forward %v (%s); recorded %s %v %v", tt.c.Host, out.Forward, out.Reason, ent.Method, ent.Rules, ent.Caps)
		}
	}
	// The method is aegis's own: a server sending it is refused.
	out, err := s.ServerRequest(ctx, MethodConnect, []byte(`{}`))
	if err != nil || out.Forward || !strings.Contains(out.Reason, "aegis's own") {
		t.Errorf("egress/connect on the wire: %+v, %v", out, err)
	}
}

// TestConnectRuntime: a connection the server's program needs to start is
// recorded as allowed under aegis:runtime, whatever the policy.
func TestConnectRuntime(t *testing.T) {
	s, log := recordingSession(t, "version: 1\nrules: []\n")
	c := capability.Capability{Kind: capability.NetConnect, Scheme: "https", Host: "registry.npmjs.org", Port: 443}
	if err := s.ConnectRuntime(context.Background(), c, "its registry"); err != nil {
		t.Fatal(err)
	}
	ent := log.entries[0]
	if ent.Method != MethodConnect || ent.Decision != "allow" || !slices.Equal(ent.Rules, []string{RuleRuntime}) || ent.Tool != "registry.npmjs.org:443" || len(ent.Caps) != 1 {
		t.Errorf("recorded %+v", ent)
	}
}

// recordingSession is a session of server "s" under the policy src,
// recording into a memLog.
func recordingSession(t *testing.T, src string) (*Session, *memLog) {
	t.Helper()
	p, err := policy.Parse("p.yaml", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(p, []*Server{{Name: "s"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	log := &memLog{}
	s, err := e.NewSession(&SessionConfig{Server: "s", ID: "x", Log: log})
	if err != nil {
		t.Fatal(err)
	}
	return s, log
}
