package main

import (
	"strings"
	"testing"
	"time"

	"github.com/aegis-mcp/aegis/internal/chain"
	"github.com/aegis-mcp/aegis/internal/record"
)

// TestLogShowsNoEscapes: what aegis log prints of an entry reaches an
// operator's terminal, and a tool's name is the model's choice (a principal
// and roles come from claims or a flag): none of them may bring a control
// character or an invalid byte there, to erase or rewrite the lines
// around it. Before the fix a tool named "\x1b[2K\r     9 allow demo/echo"
// printed as a line allowing echo.
func TestLogShowsNoEscapes(t *testing.T) {
	for _, tt := range []struct {
		name string
		e    record.Entry
		want []string // in the output, as printed
	}{
		{"tool", record.Entry{Server: "demo", Tool: "\x1b[2K\r     9 allow demo/echo", Principal: "alice"},
			[]string{`demo/"\x1b[2K\r     9 allow demo/echo" alice`}},
		{"principal and roles", record.Entry{Server: "demo", Tool: "echo", Principal: "mal\x1b[31mlory", Roles: []string{"ops", "r\x07", "\xff"}},
			[]string{`demo/echo "mal\x1b[31mlory" (roles ops, "r\a", "\xff")`}},
		{"method and tool, a byte", record.Entry{Server: "demo", Method: "prompts/get", Tool: "p\x9bx", Principal: "bob"},
			[]string{`demo prompts/get "p\x9bx" bob`}},
		{"method and tool, C1", record.Entry{Server: "demo", Method: "prompts/get", Tool: "p\u009bx", Principal: "bob"},
			[]string{`demo prompts/get "p\u009bx" bob`}},
		{"server", record.Entry{Server: "d\x1bemo", Tool: "echo", Principal: "bob"},
			[]string{`"d\x1bemo"/echo bob`}},
		{"plain", record.Entry{Server: "demo", Tool: "read_file", Principal: "alice", Roles: []string{"writer"}},
			[]string{`demo/read_file alice (roles writer)`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.e.Seq, tt.e.Time, tt.e.Decision, tt.e.Reason = 1, time.Unix(0, 0), "deny", "a reason"
			var out strings.Builder
			if err := printEntry(&out, laneEntry{lane: chain.Lane{N: 1}, e: &tt.e}, false); err != nil {
				t.Fatal(err)
			}
			got := out.String()
			for _, r := range strings.TrimSuffix(got, "\n") {
				if r != '\n' && (r < ' ' || r == 0x7f || r >= 0x80 && r < 0xa0 || r == 0xfffd) {
					t.Errorf("printed %q, holding %U", got, r)
				}
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("printed %q, want it to hold %q", got, w)
				}
			}
		})
	}
}
