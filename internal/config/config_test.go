package config

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/dlp"
	"github.com/aegis-mcp/aegis/internal/egressproxy"
	"github.com/aegis-mcp/aegis/internal/gateway"
	"github.com/aegis-mcp/aegis/internal/policy"
	"github.com/aegis-mcp/aegis/internal/sandbox"
	"github.com/google/go-cmp/cmp"
)

// TestLocalServerResolvesPolicyPaths: a policy path behind a symbolic link
// still matches a local server's capabilities, whose links are resolved.
// Without that, a deny on /tmp/x would miss /private/tmp/x on macOS.
func TestLocalServerResolvesPolicyPaths(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"real/secret", "real/open"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(dir, "real"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"aegis.yaml": "version: 1\nhome: " + dir + "\npolicy: policy.yaml\nservers:\n  fs: {builtin: filesystem, local: %LOCAL%}\n",
		"policy.yaml": "version: 1\nrules:\n" +
			"  - {id: tools, effect: allow, server: fs, tool: '*'}\n" +
			"  - {id: open, effect: allow, capability: fs.read, path_under: '~/link'}\n" +
			"  - {id: no-secret, effect: deny, capability: fs.read, path_under: '~/link/secret'}\n",
	}
	tests := []struct {
		name, local, path string
		want              policy.Effect
		wantRule          string
	}{
		{"local: the link is resolved and the deny still matches", "true", "link/secret/key", policy.Deny, "no-secret"},
		{"local: the real path is denied by the same rule", "true", "real/secret/key", policy.Deny, "no-secret"},
		{"local: the allow matches the resolved form", "true", "link/open/a", policy.Allow, "open"},
		{"not local: lexical, as written", "false", "link/secret/key", policy.Deny, "no-secret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			read := func(name string) ([]byte, error) {
				return []byte(strings.ReplaceAll(files[filepath.Base(name)], "%LOCAL%", tt.local)), nil
			}
			cfg, err := Parse(filepath.Join(dir, "aegis.yaml"), []byte(strings.ReplaceAll(files["aegis.yaml"], "%LOCAL%", tt.local)), read)
			if err != nil {
				t.Fatal(err)
			}
			eng, err := cfg.Engine()
			if err != nil {
				t.Fatal(err)
			}
			v := eng.Check(context.Background(), &gateway.Call{Server: "fs", Tool: "read_text_file", Origin: capability.Interactive,
				Arguments: []byte(`{"path":"` + filepath.Join(dir, tt.path) + `"}`)})
			if v.Effect != tt.want || v.Err != nil || !slices.Contains(v.Decision.Rules(), tt.wantRule) {
				t.Fatalf("%s: %s (%s), want %s by %q", tt.path, v.Effect, v.Reason(), tt.want, tt.wantRule)
			}
		})
	}
}

// TestParseErrors: configuration mistakes are reported at their place.
func TestParseErrors(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"unknown key", "version: 1\npolicy: p.yaml\nservers: {}\nlimit: 3\n", `c.yaml:4:1: unknown key "limit"`},
		{"unknown builtin", "version: 1\npolicy: p.yaml\nservers:\n  fs: {builtin: ftp}\n", `unknown builtin "ftp"`},
		{"server name climbing out of the state directory", "version: 1\npolicy: p.yaml\nservers:\n  ../../etc: {builtin: filesystem}\n", `c.yaml:4:14: server name "../../etc": want`},
		{"server name with a slash", "version: 1\npolicy: p.yaml\nservers:\n  a/b: {builtin: filesystem}\n", `server name "a/b"`},
		{"bad retention", "version: 1\npolicy: p.yaml\nservers: {}\nenvelopes:\n  retention: 10x\n", `c.yaml:5:3: envelopes: retention "10x": want days`},
		{"retention too short", "version: 1\npolicy: p.yaml\nservers: {}\nenvelopes: {retention: 1s}\n", `retention "1s"`},
		{"zero days", "version: 1\npolicy: p.yaml\nservers: {}\nenvelopes: {retention: 0d}\n", `retention "0d"`},
		{"envelopes unknown key", "version: 1\npolicy: p.yaml\nservers: {}\nenvelopes: {keep: 3d}\n", `unknown key "keep"`},
		{"dlp unknown kind", "version: 1\npolicy: p.yaml\nservers:\n  fs:\n    dlp: {arguments: {aws.key: deny}}\n", `c.yaml:5:10: server "fs": dlp.arguments: dlp: unknown finding kind "aws.key"`},
		{"dlp unknown action", "version: 1\npolicy: p.yaml\nservers:\n  fs:\n    dlp: {arguments: {jwt: allow}}\n", `unknown action "allow"`},
		{"dlp ask for results", "version: 1\npolicy: p.yaml\nservers:\n  fs:\n    dlp: {results: {jwt: ask}}\n", `a result cannot wait for a person`},
		{"dlp off with actions", "version: 1\npolicy: p.yaml\nservers:\n  fs:\n    dlp: {off: true, results: {jwt: report}}\n", `off: true with actions`},
		{"schema mode", "version: 1\npolicy: p.yaml\nservers:\n  fs: {schema: open}\n", `schema "open": want closed or off`},
		{"templates syntax", "version: 1\npolicy: p.yaml\nservers:\n  fs: {templates: erb}\n", `unknown template syntax "erb"`},
		{"set with a wildcard", "version: 1\npolicy: p.yaml\nservers:\n  fs:\n    tools:\n      t: {set: {/a/*/b: 1}}\n", `a field set by aegis must be one field`},
		{"identity source", "version: 1\npolicy: p.yaml\nservers:\n  fs:\n    tools:\n      t: {identity: {/owner: session}}\n", `source "session": want principal or principal.ATTRIBUTE`},
		{"relative_url base with a query", "version: 1\npolicy: p.yaml\nservers:\n  fs:\n    tools:\n      t: {relative_url: {/p: 'https://a.example/v1?x=1'}}\n", `relative_url "/p"`},
		{"negative cap", "version: 1\npolicy: p.yaml\nservers:\n  fs:\n    tools:\n      t: {caps: {per_turn: -1}}\n", `caps must not be negative`},
		{"ids without kind", "version: 1\npolicy: p.yaml\nservers:\n  fs:\n    tools:\n      t: {ids: [{pointer: /a}]}\n", `missing key "kind"`},
		{"egress bad CIDR", "version: 1\npolicy: p.yaml\nservers:\n  fs:\n    egress: {allow_hosts: [10.0.0.5/24]}\n", `host bits set`},
		{"hidden server name", "version: 1\npolicy: p.yaml\nservers:\n  .fs: {builtin: filesystem}\n", `server name ".fs"`},
		{"relative home", "version: 1\nhome: alice\npolicy: p.yaml\nservers: {}\n", `home "alice": want an absolute path`},
		{"negative limit", "version: 1\npolicy: p.yaml\nservers: {}\nlimits: {max_depth: -1}\n", `limits must not be negative`},
		{"missing policy", "version: 1\nservers: {}\n", `missing key "policy"`},
		{"message cap too small", "version: 1\npolicy: p.yaml\nservers:\n  fs: {max_message_bytes: 1000}\n", `c.yaml:4:7: server "fs": max_message_bytes 1000: want 65536 to 1073741824`},
		{"message cap too large", "version: 1\npolicy: p.yaml\nservers:\n  fs: {max_message_bytes: 1073741825}\n", `max_message_bytes 1073741825: want 65536 to`},
		{"negative message cap", "version: 1\npolicy: p.yaml\nservers:\n  fs: {max_message_bytes: -1}\n", `max_message_bytes -1`},
		{"message cap not a number", "version: 1\npolicy: p.yaml\nservers:\n  fs: {max_message_bytes: 16MiB}\n", `c.yaml:4:27: want an integer`},
		{"in-flight cap too small", "version: 1\npolicy: p.yaml\nservers:\n  fs: {max_in_flight: 7}\n", `c.yaml:4:7: server "fs": max_in_flight 7: want 8 to 65536`},
		{"in-flight cap too large", "version: 1\npolicy: p.yaml\nservers:\n  fs: {max_in_flight: 65537}\n", `max_in_flight 65537: want 8 to 65536`},
		{"negative in-flight cap", "version: 1\npolicy: p.yaml\nservers:\n  fs: {max_in_flight: -1}\n", `max_in_flight -1`},
		{"call timeout too short", "version: 1\npolicy: p.yaml\nservers:\n  fs: {call_timeout: 500ms}\n", `c.yaml:4:7: server "fs": call_timeout 500ms: want 1s to 24h0m0s`},
		{"call timeout too long", "version: 1\npolicy: p.yaml\nservers:\n  fs: {call_timeout: 25h}\n", `call_timeout 25h0m0s: want 1s to 24h0m0s`},
		{"negative call timeout", "version: 1\npolicy: p.yaml\nservers:\n  fs: {call_timeout: -1s}\n", `call_timeout -1s`},
		{"call timeout not a duration", "version: 1\npolicy: p.yaml\nservers:\n  fs: {call_timeout: 30}\n", `c.yaml:4:22: want a duration`},
		{"tools/call as a method", "version: 1\npolicy: p.yaml\nservers:\n  fs:\n    methods:\n      tools/call: {untrusted: true}\n", `c.yaml:6:19: server "fs", method "tools/call": tools/call is configured per tool, under tools`},
		{"housekeeping as a method", "version: 1\npolicy: p.yaml\nservers:\n  fs:\n    methods:\n      ping:\n", `server "fs", method "ping": aegis relays it without a decision`},
		{"notification as a method", "version: 1\npolicy: p.yaml\nservers:\n  fs:\n    methods:\n      notifications/x: {}\n", `notifications are relayed`},
		{"method with a space", "version: 1\npolicy: p.yaml\nservers:\n  fs:\n    methods:\n      \"x y\": {}\n", `printable ASCII without spaces`},
		{"method setting that rewrites", "version: 1\npolicy: p.yaml\nservers:\n  fs:\n    methods:\n      prompts/get: {set: {a: 1}}\n", `unknown key "set"`},
		{"negative method cap", "version: 1\npolicy: p.yaml\nservers:\n  fs:\n    methods:\n      resources/read: {caps: {per_minute: -1}}\n", `caps must not be negative`},
		{"stderr log too small", "version: 1\npolicy: p.yaml\nservers:\n  fs: {stderr_log_bytes: 100}\n", `server "fs": stderr_log_bytes 100: want at least 65536`},
		{"negative stderr log", "version: 1\npolicy: p.yaml\nservers:\n  fs: {stderr_log_bytes: -5}\n", `stderr_log_bytes -5`},
		{"case_insensitive not a bool", "version: 1\npolicy: p.yaml\nservers:\n  fs: {case_insensitive: maybe}\n", `c.yaml:4:26:`},
		{"serve without auth", "version: 1\npolicy: p.yaml\nservers: {}\nserve: {listen: '127.0.0.1:1'}\n", `c.yaml:4:8: serve: auth: say who may call`},
		{"serve with empty auth", "version: 1\npolicy: p.yaml\nservers: {}\nserve:\n  auth: {}\n", `c.yaml:5:9: serve: auth: say who may call`},
		{"serve listen without port", "version: 1\npolicy: p.yaml\nservers: {}\nserve: {listen: localhost, auth: {none: me}}\n", `serve: listen "localhost": want host:port`},
		{"serve no auth on a public address", "version: 1\npolicy: p.yaml\nservers: {}\nserve: {listen: '0.0.0.0:8347', auth: {none: me}}\n", `none: only on a loopback address`},
		{"serve no auth beside keys", "version: 1\npolicy: p.yaml\nservers: {}\nserve:\n  auth: {none: me, api_keys: [{name: ci, sha256: " + strings.Repeat("ab", 32) + "}]}\n", `not beside issuer or api_keys`},
		{"serve issuer without audience", "version: 1\npolicy: p.yaml\nservers: {}\nserve:\n  auth: {issuer: 'https://idp.example'}\n", `issuer without audience`},
		{"serve jwks without issuer", "version: 1\npolicy: p.yaml\nservers: {}\nserve:\n  auth: {jwks_url: 'https://idp.example/jwks', api_keys: [{name: a, sha256: " + strings.Repeat("ab", 32) + "}]}\n", `jwks_url without issuer`},
		{"serve api key not a hash", "version: 1\npolicy: p.yaml\nservers: {}\nserve:\n  auth:\n    api_keys: [{name: ci, sha256: hunter2}]\n", `c.yaml:6:16: serve: auth: api key "ci": sha256: want 64 hex digits`},
		{"serve api key named twice", "version: 1\npolicy: p.yaml\nservers: {}\nserve:\n  auth:\n    api_keys: [{name: ci, sha256: " + strings.Repeat("ab", 32) + "}, {name: ci, sha256: " + strings.Repeat("cd", 32) + "}]\n", `api key "ci": named twice`},
		{"serve api key without a name", "version: 1\npolicy: p.yaml\nservers: {}\nserve:\n  auth:\n    api_keys: [{sha256: " + strings.Repeat("ab", 32) + "}]\n", `missing key "name"`},
		{"serve public url with a query", "version: 1\npolicy: p.yaml\nservers: {}\nserve: {public_url: 'https://a.example/?x=1', auth: {none: me}}\n", `public_url "https://a.example/?x=1"`},
		{"serve origin with a path", "version: 1\npolicy: p.yaml\nservers: {}\nserve: {origins: ['https://a.example/app'], auth: {none: me}}\n", `origins: "https://a.example/app": want an origin`},
		{"serve idle timeout", "version: 1\npolicy: p.yaml\nservers: {}\nserve: {idle_timeout: 5, auth: {none: me}}\n", `idle_timeout "5"`},
		{"serve sessions per principal", "version: 1\npolicy: p.yaml\nservers: {}\nserve: {max_sessions_per_principal: -1, auth: {none: me}}\n", `max_sessions_per_principal -1`},
		{"state not postgres", "version: 1\npolicy: p.yaml\nservers: {}\nstate: {postgres: 'mysql://db/aegis'}\n", `c.yaml:4:8: state: postgres: want a postgres:// URL`},
		{"state with a password", "version: 1\npolicy: p.yaml\nservers: {}\nstate: {postgres: 'postgres://aegis:hunter2@db/aegis'}\n", `the URL holds a password`},
		{"url with credentials", "version: 1\npolicy: p.yaml\nservers:\n  r: {url: 'https://u:p@mcp.example/mcp'}\n", `server "r": url "https://u:p@mcp.example/mcp": want an http(s) URL without credentials`},
		{"url not http", "version: 1\npolicy: p.yaml\nservers:\n  r: {url: 'file:///etc/passwd'}\n", `want an http(s) URL`},
		{"url and command", "version: 1\npolicy: p.yaml\nservers:\n  r: {url: 'https://mcp.example/mcp', command: [x]}\n", `command and url`},
		{"bearer without url", "version: 1\npolicy: p.yaml\nservers:\n  r: {bearer_env: TOKEN, command: [x]}\n", `bearer_env is for a server at a url`},
		{"serve unknown key", "version: 1\npolicy: p.yaml\nservers: {}\nserve: {port: 5, auth: {none: me}}\n", `unknown key "port"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			read := func(string) ([]byte, error) { return []byte("version: 1\nrules: []\n"), nil }
			_, err := Parse("c.yaml", []byte(tt.yaml), read)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestDLPDefaults: a DLP map without "default" keeps the side's default
// for the kinds it does not name; no block at all is deny / redact; off is
// nothing scanned.
func TestDLPDefaults(t *testing.T) {
	read := func(string) ([]byte, error) { return []byte("version: 1\nrules: []\n"), nil }
	for _, tc := range []struct {
		name, dlpYAML      string
		argsJWT, resultJWT dlp.Action
		off                bool
	}{
		{"absent", "", dlp.ActionDeny, dlp.ActionRedact, false},
		{"results name one kind", "    dlp: {results: {private_key: deny}}\n", dlp.ActionDeny, dlp.ActionRedact, false},
		{"arguments name one kind", "    dlp: {arguments: {card: redact}}\n", dlp.ActionDeny, dlp.ActionRedact, false},
		{"explicit defaults", "    dlp: {arguments: {default: report}, results: {default: deny}}\n", dlp.ActionReport, dlp.ActionDeny, false},
		{"off", "    dlp: {off: true}\n", 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse("c.yaml", []byte("version: 1\npolicy: p.yaml\nservers:\n  fs:\n    builtin: filesystem\n"+tc.dlpYAML), read)
			if err != nil {
				t.Fatal(err)
			}
			d := c.Servers[0].DLP
			if tc.off {
				if d != nil {
					t.Errorf("dlp off: got %+v", d)
				}
				return
			}
			if got := d.Arguments.For(dlp.JWT); got != tc.argsJWT {
				t.Errorf("arguments jwt: %s, want %s", got, tc.argsJWT)
			}
			if got := d.Results.For(dlp.JWT); got != tc.resultJWT {
				t.Errorf("results jwt: %s, want %s", got, tc.resultJWT)
			}
		})
	}
}

// TestRelaySettings: a server's relay settings are read as given, and
// absent ones are zero (the relay's defaults).
func TestRelaySettings(t *testing.T) {
	read := func(string) ([]byte, error) { return []byte("version: 1\nrules: []\n"), nil }
	cfg, err := Parse("c.yaml", []byte("version: 1\npolicy: p.yaml\nservers:\n  media: {max_message_bytes: 67108864, stderr_log_bytes: 1048576, max_in_flight: 64, call_timeout: 2m, sandbox: required, env: [API_URL, MODE=x]}\n  fs: {sandbox: best-effort}\n  bare:\n"), read)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Relay{
		"media": {MaxMessageBytes: 64 << 20, StderrLogBytes: 1 << 20, MaxInFlight: 64, CallTimeout: 2 * time.Minute,
			Sandbox: sandbox.Required, Env: []string{"API_URL", "MODE=x"}},
		"fs":   {Sandbox: sandbox.BestEffort},
		"bare": {Sandbox: sandbox.DefaultMode()},
	}
	for name, w := range want {
		if diff := cmp.Diff(w, cfg.Relay[name]); diff != "" {
			t.Errorf("server %q: relay (-want +got):\n%s", name, diff)
		}
	}
	if _, err := Parse("c.yaml", []byte("version: 1\npolicy: p.yaml\nservers:\n  fs: {sandbox: maybe}\n"), read); err == nil || !strings.Contains(err.Error(), `sandbox "maybe"`) {
		t.Errorf("sandbox: maybe: error %v, want one naming it", err)
	}
}

// TestServe: serve: reaches the configuration with its defaults, and a
// server's command its relay settings.
func TestServe(t *testing.T) {
	read := func(string) ([]byte, error) { return []byte("version: 1\nrules: []\n"), nil }
	key := strings.Repeat("AB", 32)
	cfg, err := Parse("c.yaml", []byte("version: 1\npolicy: p.yaml\nservers:\n  fs: {command: [npx, -y, server, /srv]}\nserve:\n  auth:\n    issuer: https://idp.example\n    audience: https://aegis.example/mcp\n    roles_claim: realm_access.roles\n    api_keys: [{name: ci, sha256: "+key+", roles: [bot]}]\n"), read)
	if err != nil {
		t.Fatal(err)
	}
	want := &Serve{Listen: DefaultListen, IdleTimeout: DefaultIdleTimeout, MaxSessions: DefaultMaxSessions, Auth: Auth{
		Issuer: "https://idp.example", Audience: "https://aegis.example/mcp", RolesClaim: "realm_access.roles",
		APIKeys: []APIKey{{Name: "ci", SHA256: strings.ToLower(key), Roles: []string{"bot"}}},
	}}
	if diff := cmp.Diff(want, cfg.Serve); diff != "" {
		t.Errorf("serve (-want +got):\n%s", diff)
	}
	if got := cfg.Relay["fs"].Command; !slices.Equal(got, []string{"npx", "-y", "server", "/srv"}) {
		t.Errorf("command %q", got)
	}
}

// TestCredentials: a server's credentials reach its relay settings as
// given, a relative ca_file made relative to the configuration's
// directory; their keys are checked strictly (the egress proxy checks
// their values when it starts).
func TestCredentials(t *testing.T) {
	read := func(string) ([]byte, error) { return []byte("version: 1\nrules: []\n"), nil }
	cfg, err := Parse("/etc/aegis/c.yaml", []byte("version: 1\npolicy: p.yaml\nservers:\n  api:\n    credentials:\n"+
		"      - {host: api.example.com, value_env: API_TOKEN, ca_file: certs/ca.pem}\n"+
		"      - {host: tracker.internal, scheme: http, port: 8080, header: X-Key, value_env: TRACKER, ca_file: /abs/ca.pem}\n"), read)
	if err != nil {
		t.Fatal(err)
	}
	want := []egressproxy.Credential{
		{Host: "api.example.com", ValueEnv: "API_TOKEN", CAFile: "/etc/aegis/certs/ca.pem"},
		{Host: "tracker.internal", Scheme: "http", Port: 8080, Header: "X-Key", ValueEnv: "TRACKER", CAFile: "/abs/ca.pem"},
	}
	if diff := cmp.Diff(want, cfg.Relay["api"].Credentials); diff != "" {
		t.Errorf("credentials (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"{host: a, value: x}", "{host: a, token: x}", "{host: a, root_cas: x}"} {
		_, err := Parse("c.yaml", []byte("version: 1\npolicy: p.yaml\nservers:\n  api:\n    credentials: ["+bad+"]\n"), read)
		if err == nil || !strings.Contains(err.Error(), "unknown key") {
			t.Errorf("credentials: [%s]: error %v, want an unknown key", bad, err)
		}
	}
}

// TestMethods: a server's methods reach its gateway configuration, each
// with its settings; a method listed bare is one aegis may pass on.
func TestMethods(t *testing.T) {
	read := func(string) ([]byte, error) { return []byte("version: 1\nrules: []\n"), nil }
	cfg, err := Parse("c.yaml", []byte("version: 1\npolicy: p.yaml\nservers:\n  fs:\n    methods:\n      resources/read: {untrusted: true, caps: {per_minute: 3}}\n      x/sync:\n"), read)
	if err != nil {
		t.Fatal(err)
	}
	ms := cfg.Servers[0].Methods
	if len(ms) != 2 || ms["x/sync"] == nil || ms["resources/read"] == nil {
		t.Fatalf("methods %v", ms)
	}
	if r := ms["resources/read"]; !r.Untrusted || r.Caps.PerMinute != 3 {
		t.Errorf("resources/read: %+v", r)
	}
}

// TestRunUnbound: run_unbound reaches the tool's configuration; it is a
// tool's setting, not a method's.
func TestRunUnbound(t *testing.T) {
	read := func(string) ([]byte, error) { return []byte("version: 1\nrules: []\n"), nil }
	cfg, err := Parse("c.yaml", []byte("version: 1\npolicy: p.yaml\nservers:\n  fs:\n    tools:\n      render: {run_unbound: true}\n      read: {untrusted: true}\n"), read)
	if err != nil {
		t.Fatal(err)
	}
	tools := cfg.Servers[0].Tools
	if !tools["render"].RunUnbound || tools["read"].RunUnbound {
		t.Errorf("run_unbound: render %v, read %v; want true, false", tools["render"].RunUnbound, tools["read"].RunUnbound)
	}
	_, err = Parse("c.yaml", []byte("version: 1\npolicy: p.yaml\nservers:\n  fs:\n    methods:\n      resources/read: {run_unbound: true}\n"), read)
	if err == nil || !strings.Contains(err.Error(), "run_unbound") {
		t.Errorf("run_unbound under methods: error %v, want one naming it", err)
	}
}

// TestCaseInsensitive: a server's volume ignores case as the file says;
// unsaid, a local server's does on macOS only, and a remote one's does not.
func TestCaseInsensitive(t *testing.T) {
	read := func(string) ([]byte, error) { return []byte("version: 1\nrules: []\n"), nil }
	cfg, err := Parse("c.yaml", []byte("version: 1\npolicy: p.yaml\nservers:\n  on: {case_insensitive: true}\n  off: {case_insensitive: false}\n  here: {}\n  remote: {local: false}\n"), read)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"on": true, "off": false, "here": runtime.GOOS == "darwin", "remote": false}
	for _, s := range cfg.Servers {
		if s.CaseInsensitive != want[s.Name] {
			t.Errorf("server %q: CaseInsensitive %v, want %v", s.Name, s.CaseInsensitive, want[s.Name])
		}
	}
}

// TestServerArgs: the filesystem server's allowed directories are read
// from its command line as the server reads them: every argument after
// the one naming it, "~" expanded, made absolute, kept if a directory,
// a linked one in both its forms.
func TestServerArgs(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"home/proj", "work/a"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "work"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	read := func(string) ([]byte, error) { return []byte("version: 1\nrules: []\n"), nil }
	src := "version: 1\nhome: " + filepath.Join(root, "home") + "\npolicy: p.yaml\nservers:\n  fs: {builtin: filesystem}\n  other: {}\n"
	tests := []struct {
		name, server string
		argv         []string
		want         []string
	}{
		{"npx", "fs", []string{"npx", "-y", "@modelcontextprotocol/server-filesystem", "~/proj", "a", filepath.Join(root, "file"), filepath.Join(root, "missing"), filepath.Join(root, "link")},
			[]string{filepath.Join(root, "home/proj"), filepath.Join(root, "work/a"), filepath.Join(root, "link"), filepath.Join(root, "work")}},
		{"node and the entry point", "fs", []string{"node", "/x/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", root + "/home/proj/"},
			[]string{filepath.Join(root, "home/proj")}},
		{"no such argument", "fs", []string{"my-server", root}, nil},
		{"a server without the semantics", "other", []string{"npx", "@modelcontextprotocol/server-filesystem", root}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse("c.yaml", []byte(src), read)
			if err != nil {
				t.Fatal(err)
			}
			got := cfg.ServerArgs(tt.server, tt.argv, filepath.Join(root, "work"))
			if !slices.Equal(got, tt.want) {
				t.Errorf("bases %q, want %q", got, tt.want)
			}
			for _, s := range cfg.Servers {
				if s.Name == tt.server && !slices.Equal(s.Options.Path.Bases, tt.want) {
					t.Errorf("server's bases %q, want %q", s.Options.Path.Bases, tt.want)
				}
			}
		})
	}
}

// TestSets: named sets of trusted values from the configuration and from
// files reach the policy (id_in) and the engine; a set file is one of
// aegis's protected files; what cannot be a set is an error naming it.
func TestSets(t *testing.T) {
	files := map[string]string{
		"p.yaml":     "version: 1\nrules:\n  - {id: t, effect: allow, tool: pay}\n  - {id: v, effect: allow, capability: id, id_kind: bank.payee, id_in: [payees]}\n",
		"payees.txt": "# verified payees\np-landlord\n\n  p-util-*  \n",
		"empty.txt":  "# nothing\n",
	}
	read := func(name string) ([]byte, error) {
		if s, ok := files[filepath.Base(name)]; ok {
			return []byte(s), nil
		}
		return nil, os.ErrNotExist
	}
	cfg, err := Parse("/etc/aegis/c.yaml", []byte("version: 1\npolicy: p.yaml\nsets:\n  payees: {id_kind: bank.payee, values: [p-rent], file: payees.txt}\nservers:\n  bank: {}\n"), read)
	if err != nil {
		t.Fatal(err)
	}
	vs := cfg.Sets["payees"]
	for _, v := range []string{"p-rent", "p-landlord", "p-util-gas"} {
		if !vs.Has(v) {
			t.Errorf("the set lacks %q", v)
		}
	}
	if vs.Has("p-attacker") || vs.Has("# verified payees") {
		t.Error("the set holds what it should not")
	}
	if !slices.Contains(cfg.Files, "/etc/aegis/payees.txt") {
		t.Errorf("the set's file is not among aegis's files: %v", cfg.Files)
	}
	for _, tt := range []struct{ name, doc, want string }{
		{"no values", "sets:\n  payees: {id_kind: bank.payee, file: empty.txt}\n", `set "payees" has no values`},
		{"a pattern trusting all", "sets:\n  payees: {id_kind: bank.payee, values: [\"*\"]}\n", `trusts every value`},
		{"no kind", "sets:\n  payees: {values: [a]}\n", `id_kind`},
		{"a bad name", "sets:\n  Payees: {id_kind: k, values: [a]}\n", `set "Payees": want a name`},
		{"a missing file", "sets:\n  payees: {id_kind: k, file: gone.txt}\n", `set "payees"`},
		{"a set the policy names, missing", "sets:\n  others: {id_kind: k, values: [a]}\n", `id_in "payees"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("/etc/aegis/c.yaml", []byte("version: 1\npolicy: p.yaml\n"+tt.doc+"servers:\n  bank: {}\n"), read)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one saying %q", err, tt.want)
			}
		})
	}
}
