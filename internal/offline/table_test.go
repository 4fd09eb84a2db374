package offline

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExampleTable: the example policy's own table passes whole.
func TestExampleTable(t *testing.T) {
	rs, err := Run(context.Background(), "../../examples/filesystem/policy_test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) < 5 {
		t.Fatalf("%d results: the table was not read", len(rs))
	}
	for _, r := range rs {
		if !r.Pass {
			t.Errorf("%s: %s: want %s %v, got %s %v (%s)", r.Pos, r.Name, r.Want, r.WantRules, r.Got, r.GotRules, r.Reason)
		}
	}
}

// TestTableFailures: a wrong expectation fails, by decision or by rule; a
// bad want or origin is an error naming the test's position.
func TestTableFailures(t *testing.T) {
	cfg, err := filepath.Abs("../../examples/filesystem/aegis.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, test string
		pass       bool
		err        string
	}{
		{"right", `{name: t, call: {server: fs, tool: read_text_file, principal: alice, arguments: {path: "~/.ssh/id_rsa"}}, want: deny, rules: [no-secrets, fs-tools]}`, true, ""},
		{"wrong decision", `{name: t, call: {server: fs, tool: read_text_file, principal: alice, arguments: {path: "~/.ssh/id_rsa"}}, want: allow}`, false, ""},
		{"wrong rule", `{name: t, call: {server: fs, tool: read_text_file, principal: alice, arguments: {path: "~/.ssh/id_rsa"}}, want: deny, rules: [other]}`, false, ""},
		{"unknown server", `{name: t, call: {server: nope, tool: x}, want: deny}`, true, ""},
		{"bad want", `{name: t, call: {server: fs, tool: x}, want: maybe}`, false, "t.yaml:3:5: want \"maybe\""},
		{"bad origin", `{name: t, call: {server: fs, tool: x, origin: robot}, want: deny}`, false, "t.yaml:3:5: origin \"robot\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "t.yaml")
			if err := os.WriteFile(p, []byte("config: "+cfg+"\ntests:\n  - "+tc.test+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			rs, err := Run(context.Background(), p)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil || len(rs) != 1 {
				t.Fatalf("%v, %d results", err, len(rs))
			}
			if rs[0].Pass != tc.pass {
				t.Errorf("pass = %v (%+v), want %v", rs[0].Pass, rs[0], tc.pass)
			}
		})
	}
}
