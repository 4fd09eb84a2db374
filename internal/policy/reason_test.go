package policy

import (
	"fmt"
	"testing"
)

// ruleSaysFmt is how ruleSays wrote a reason with fmt, kept as its
// reference.
func ruleSaysFmt(r *Rule, e Effect, what string) string {
	s := fmt.Sprintf("rule %q (%s:%d) %s %s", r.ID, r.File, r.Line, e.verb(), what)
	if r.Mode == Shadow {
		s = "shadow " + s
	}
	if r.Reason != "" {
		s += ": " + r.Reason
	}
	return s
}

// TestRuleSays holds the reasons the chain records and the model reads to
// the fmt-built ones, byte for byte, for awkward ids, files and reasons.
func TestRuleSays(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    Rule
		e    Effect
		what string
	}{
		{"plain", Rule{ID: "no-ssh", File: "policy.yaml", Line: 9}, Deny, `tool "read_file" on server "fs"`},
		{"reason", Rule{ID: "projects", File: "p.yaml", Line: 1, Reason: "work files"}, Allow, "fs.read /home/a"},
		{"shadow ask", Rule{ID: "x", File: "p.yaml", Line: 120000, Mode: Shadow}, Ask, "exec git"},
		{"quotes and escapes", Rule{ID: "a\"b\\c\n\x00", File: "dir with space/p\"q.yaml", Line: 0, Reason: "r\x7f"}, Deny, "w\"\n"},
		{"non-ASCII", Rule{ID: "règle-✓", File: "politique.yaml", Line: 3, Reason: "é"}, Allow, "ü"},
		{"invalid UTF-8", Rule{ID: "\xff\xfe", File: "\xc0.yaml", Line: -1}, Deny, "\xed\xa0\x80"},
		{"empty", Rule{}, Effect(99), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, want := ruleSays(&tc.r, tc.e, tc.what), ruleSaysFmt(&tc.r, tc.e, tc.what); got != want {
				t.Errorf("ruleSays = %q\nwant (fmt)  %q", got, want)
			}
		})
	}
}

func FuzzRuleSays(f *testing.F) {
	f.Add("no-ssh", "policy.yaml", 9, "reason", "what", false, uint8(0))
	f.Fuzz(func(t *testing.T, id, file string, line int, reason, what string, shadow bool, e uint8) {
		r := Rule{ID: id, File: file, Line: line, Reason: reason}
		if shadow {
			r.Mode = Shadow
		}
		if got, want := ruleSays(&r, Effect(e), what), ruleSaysFmt(&r, Effect(e), what); got != want {
			t.Fatalf("ruleSays = %q, want %q", got, want)
		}
		req := &Request{Tool: id, Server: file}
		d := Decision{req: req}
		if got, want := d.toolWhat(), fmt.Sprintf("tool %q on server %q", id, file); got != want {
			t.Fatalf("toolWhat = %q, want %q", got, want)
		}
	})
}
