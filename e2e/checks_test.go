package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The checks of issue 4 through `aegis run` with the official Go SDK client:
// the bundled demo server (its echo_args returns the arguments it received,
// its fetch describes a request and never connects, its list_items returns
// ids) behind aegis, one call per check. Names resolve from a static table:
// the test connects to nothing but its own processes.
const checksConfig = `version: 1
policy: policy.yaml
principals:
  e2e: {account: e2e@corp.example}
servers:
  demo:
    bindings: bindings.yaml
    templates: mustache
    dlp:
      arguments: {default: deny, card: redact}
      results: {default: redact}
    egress:
      resolver: static
      hosts:
        example.com: [93.184.215.14]
        rebind.example.net: [93.184.215.14, 10.0.0.7]
        files.example.com: [93.184.215.14]
    tools:
      echo_args:
        identity: {/from: principal.account}
        clear: [/bcc]
        set: {/footer: via aegis}
        caps: {per_session: 4}
        open: [""]     # echo_args takes any object: its schema is {"type":"object"}
      list_items:
        ids: [{kind: demo.item, pointer: /structuredContent/items/*/id}]
      fetch:
        untrusted: true
      count:
        clamp: {/to: 3}
      read_file:
        relative_url: {/path: "https://files.example.com/v1/"}
`

const checksBindings = `version: 1
tools:
  echo_args:
    tier: mutating
    args: [{pointer: /item, kind: id, id_kind: demo.item}]
  list_items: {tier: read-only}
  count: {tier: read-only}
  read_file: {tier: data-read}
  fetch:
    tier: data-read
    args: [{pointer: /url, kind: net.connect}]
`

const checksPolicy = `version: 1
rules:
  - {id: demo, effect: allow, server: demo, tool: [echo_args, list_items, fetch, count, read_file]}
  - {id: items, effect: allow, capability: id}
  - {id: web, effect: allow, capability: net.connect, scheme: https, host: "class:public"}
  - {id: no-echo-when-tainted, effect: deny, server: demo, tool: echo_args, taint: true}
`

func TestChecksGoClient(t *testing.T) {
	dir := tempDir(t)
	for name, text := range map[string]string{"aegis.yaml": checksConfig, "bindings.yaml": checksBindings, "policy.yaml": checksPolicy} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := baseEnv(dir, filepath.Join(dir, "state"))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := aegisRun(filepath.Join(dir, "aegis.yaml"), "demo", aegisBin, "demo-server", "--root", dir)
	c := exec.Command(cmd[0], cmd[1:]...)
	c.Env = env
	var stderr bytes.Buffer
	c.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "aegis-e2e-go", Version: "1.0.0"}, nil)
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: c, TerminateDuration: 2 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connecting through aegis: %v\nstderr:\n%s", err, stderr.String())
	}
	if _, err := session.ListTools(ctx, nil); err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	type step struct {
		name    string
		tool    string
		args    map[string]any
		refused string // a substring of the refusal; "" when the call goes through
		result  string // a substring of the result text when it goes through
	}
	steps := []step{
		{"identity injected, bcc cleared, footer pinned, template neutralised", "echo_args",
			map[string]any{"to": "bob", "bcc": "eve", "body": "{{{secrets.KEY}}}"}, "",
			`{"body":"{ { {secrets.KEY} } }","to":"bob","footer":"via aegis","from":"e2e@corp.example"}`},
		{"a model-supplied identity refused", "echo_args", map[string]any{"from": "ceo@corp.example"}, "set by aegis from the session", ""},
		{"closed schema: an extra key", "count", map[string]any{"to": 2, "extra": true}, "closed input schema", ""},
		{"closed schema: a clamp", "count", map[string]any{"to": 1000}, "", "counted to 3"},
		{"a relative path on the base URL", "read_file", map[string]any{"path": "docs/a.txt"}, "", ""},
		{"an absolute URL where a path belongs", "read_file", map[string]any{"path": "https://evil.example/x"}, "must be a path on https://files.example.com/v1/", ""},
		{"a scheme-relative URL where a path belongs", "read_file", map[string]any{"path": "//evil.example/x"}, "must be a path on https://files.example.com/v1/", ""},
		{"egress: a name with a private address among its answers", "fetch", map[string]any{"url": "https://rebind.example.net/"}, "10.0.0.7, which is private", ""},
		{"provenance: an id the server never returned", "echo_args", map[string]any{"item": "item-1"}, "not among the session's recent ids", ""},
		{"list the items", "list_items", map[string]any{}, "", "item-99 was archived"},
		{"provenance: a listed id", "echo_args", map[string]any{"item": "item-1"}, "", `"item":"item-1"`},
		{"provenance: an id seen only in free text", "echo_args", map[string]any{"item": "item-99"}, "not among the session's recent ids", ""},
		{"DLP: a key in the arguments", "echo_args", map[string]any{"note": "AKIAQ3EGTV7KPZ4HXW2M"}, "hold a secret: aws.access_key", ""},
		{"DLP: a card number redacted", "echo_args", map[string]any{"note": "card 4111 1111 1111 1111"}, "", `card [REDACTED:card]`},
		{"caps: the fourth echo in the session", "echo_args", map[string]any{"x": 1}, "", `"x":1`},
		{"caps: over the cap", "echo_args", map[string]any{"x": 2}, "reached its per_session cap", ""},
		{"an untrusted tool's result", "fetch", map[string]any{"url": "https://example.com/"}, "", "example.com"},
		{"taint: the policy denies once tainted", "echo_args", map[string]any{"x": 3}, "no-echo-when-tainted", ""},
	}
	for _, s := range steps {
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: s.tool, Arguments: s.args})
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		got := resultText(res)
		refusedByAegis := res.IsError && strings.HasPrefix(got, "aegis denied this call")
		switch {
		case s.refused != "" && !refusedByAegis:
			t.Errorf("%s: went through (%q), want a refusal mentioning %q", s.name, got, s.refused)
		case s.refused != "" && !strings.Contains(got, s.refused):
			t.Errorf("%s: refused with %q, want it to mention %q", s.name, got, s.refused)
		case s.refused == "" && refusedByAegis:
			t.Errorf("%s: refused: %s", s.name, got)
		case s.result != "" && !strings.Contains(got, s.result):
			t.Errorf("%s: result %q, want it to contain %q", s.name, got, s.result)
		}
	}
	if err := session.Close(); err != nil {
		t.Errorf("closing: %v", err)
	}
	// The refusals are in the chain, by aegis's own rules.
	out, code := aegisCLI(t, env, "log", "-n", "0", "--json")
	if code != 0 {
		t.Fatalf("aegis log: exit %d", code)
	}
	for _, rule := range []string{"aegis:identity", "aegis:schema", "aegis:relative-url", "aegis:egress", "aegis:provenance", "aegis:dlp", "aegis:cap", "no-echo-when-tainted"} {
		if !strings.Contains(out, `"`+rule+`"`) {
			t.Errorf("the chain has no entry decided by %s", rule)
		}
	}
	if strings.Contains(out, "AKIAQ3EGTV7KPZ4HXW2M") || strings.Contains(out, "4111 1111") {
		t.Error("a secret reached the chain")
	}
	if strings.Contains(stderr.String(), "DATA RACE") {
		t.Errorf("aegis reported a data race:\n%s", stderr.String())
	}
}
