package binding

import (
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/aegis-mcp/aegis/internal/args"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/aegis-mcp/aegis/internal/capability"
)

func TestParseFile(t *testing.T) {
	data, err := os.ReadFile("testdata/mail.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tab, err := Parse("testdata/mail.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	if got := tab["list_messages"]; got == nil || got.Tier != capability.TierDataRead || len(got.Args) != 0 {
		t.Errorf("list_messages = %v", got)
	}
	send := tab["send_message"]
	if send == nil {
		t.Fatal("send_message missing")
	}
	if got, want := send.String(), "send_message (mutating): /to/* id(mail.contact) /attachments/*/path fs.read /callback net.connect"; got != want {
		t.Errorf("send_message = %q, want %q", got, want)
	}
	got, err := derive(t, send, `{"to":["c1"],"attachments":[{"path":"/tmp/a"}],"callback":"[::1]:8080"}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[2].Host != "::1" || got[2].Port != 8080 || got[2].Classes&capability.Loopback == 0 {
		t.Errorf("derived %+v", got)
	}
}

// TestParseErrors checks that each mistake is reported at its place.
func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown key", "version: 1\ntools:\n  t:\n    tier: mutating\n    limit: 3\n",
			`b.yaml:5:5: unknown key "limit" in tool`},
		{"a binding cannot hold a prefix", "version: 1\ntools:\n  t:\n    tier: mutating\n    args:\n      - {pointer: /p, kind: fs.read, path_prefix: /home}\n",
			`b.yaml:6:38: unknown key "path_prefix" in arg`},
		{"bad kind", "version: 1\ntools:\n  t:\n    tier: mutating\n    args:\n      - {pointer: /p, kind: fs.delete}\n",
			`b.yaml:6:29: unknown capability kind "fs.delete"`},
		{"bad pointer", "version: 1\ntools:\n  t:\n    tier: mutating\n    args:\n      - {pointer: p, kind: fs.read}\n",
			`b.yaml:6:19: pointer "p"`},
		{"bad tier", "version: 1\ntools:\n  t:\n    tier: harmless\n",
			`b.yaml:4:11: unknown risk tier "harmless"`},
		{"missing tier", "version: 1\ntools:\n  t:\n    args: []\n",
			`b.yaml:4:5: missing key "tier"`},
		{"form for the wrong kind", "version: 1\ntools:\n  t:\n    tier: mutating\n    args:\n      - {pointer: /p, kind: fs.read, form: url}\n",
			`b.yaml:6:44: form url does not apply to fs.read`},
		{"id without id_kind", "version: 1\ntools:\n  t:\n    tier: mutating\n    args:\n      - {pointer: /p, kind: id}\n",
			`b.yaml:6:9: an id argument needs id_kind`},
		{"id_kind on a path", "version: 1\ntools:\n  t:\n    tier: mutating\n    args:\n      - {pointer: /p, kind: fs.read, id_kind: x}\n",
			`b.yaml:6:47: id_kind applies only to kind id`},
		{"id_kind that looks like a path", "version: 1\ntools:\n  t:\n    tier: mutating\n    args:\n      - {pointer: /p, kind: id, id_kind: /home}\n",
			`b.yaml:6:42: id_kind "/home"`},
		{"subtree on a URL", "version: 1\ntools:\n  t:\n    tier: mutating\n    args:\n      - {pointer: /p, kind: net.connect, subtree: true}\n",
			`b.yaml:6:51: subtree applies only to a path of kind fs.read or fs.write, not net.connect`},
		{"subtree on an id", "version: 1\ntools:\n  t:\n    tier: mutating\n    args:\n      - {pointer: /p, kind: id, id_kind: x, subtree: true}\n",
			`b.yaml:6:54: subtree applies only to a path`},
		{"subtree not a boolean", "version: 1\ntools:\n  t:\n    tier: mutating\n    args:\n      - {pointer: /p, kind: fs.write, subtree: \"true\"}\n",
			`b.yaml:6:48: subtree: want true or false`},
		{"subtree as a word", "version: 1\ntools:\n  t:\n    tier: mutating\n    args:\n      - {pointer: /p, kind: fs.write, subtree: recursive}\n",
			`b.yaml:6:48: subtree: want true or false`},
		{"provenance on a path", "version: 1\ntools:\n  t:\n    tier: mutating\n    args:\n      - {pointer: /p, kind: fs.read, provenance: flag}\n",
			`b.yaml:6:50: provenance applies only to kind id, not fs.read`},
		{"provenance of another word", "version: 1\ntools:\n  t:\n    tier: mutating\n    args:\n      - {pointer: /p, kind: id, id_kind: x, provenance: optional}\n",
			`provenance "optional": want required or flag`},
		{"a value name with a dot", "version: 1\ntools:\n  t:\n    tier: mutating\n    values:\n      - {pointer: /a, name: pay.amount}\n",
			`value name "pay.amount"`},
		{"a value named twice", "version: 1\ntools:\n  t:\n    tier: mutating\n    values:\n      - {pointer: /a, name: amount}\n      - {pointer: /b, name: amount}\n",
			`value name "amount" is given twice`},
		{"a value without a pointer", "version: 1\ntools:\n  t:\n    tier: mutating\n    values:\n      - {name: amount}\n",
			`missing key "pointer"`},
		{"relative_to on a URL", "version: 1\ntools:\n  t:\n    tier: mutating\n    args:\n      - {pointer: /u, kind: net.connect, relative_to: /base}\n",
			`relative_to applies only to a path`},
		{"relative_to a pattern", "version: 1\ntools:\n  t:\n    tier: mutating\n    args:\n      - {pointer: /f, kind: fs.read, relative_to: /bases/*}\n",
			`relative_to /bases/*: want one argument`},
		{"wrong version", "version: 2\ntools: {}\n", `b.yaml:1:1: version 2: want 1`},
		{"neither tools nor prompts", "version: 1\n", `b.yaml:1:1: a bindings file binds tools, prompts or both`},
		{"a prompt with a prefix", "version: 1\nprompts:\n  p:\n    tier: mutating\n    args:\n      - {pointer: /c, kind: exec, path_prefix: /x}\n",
			`b.yaml:6:35: unknown key "path_prefix"`},
		{"a prompt with no binding", "version: 1\nprompts:\n  p:\n", `prompt "p" has no binding`},
		{"a prompt's bad kind", "version: 1\nprompts:\n  p:\n    tier: mutating\n    args:\n      - {pointer: /c, kind: shell}\n",
			`b.yaml:6:29: unknown capability kind "shell"`},
		{"not yaml", "version: [\n", `b.yaml:`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("b.yaml", []byte(tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v\nwant one containing %q", err, tt.want)
			}
		})
	}
}

// TestParseSubtree: subtree: true marks an fs argument whose tool acts on
// everything under the path, and its capabilities carry the mark; false,
// or no key, leaves it off.
func TestParseSubtree(t *testing.T) {
	src := "version: 1\ntools:\n  rm_tree:\n    tier: mutating\n    args:\n" +
		"      - {pointer: /dir, kind: fs.write, subtree: true}\n" +
		"      - {pointer: /log, kind: fs.write, subtree: false}\n" +
		"      - {pointer: /conf, kind: fs.read}\n"
	tab, err := Parse("b.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	b := tab["rm_tree"]
	if got, want := b.String(), "rm_tree (mutating): /dir fs.write(subtree) /log fs.write /conf fs.read"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	got, err := derive(t, b, `{"dir":"/tmp/a/../b","log":"/tmp/l","conf":"/etc/c"}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []capability.Capability{
		{Kind: capability.FSWrite, Path: "/tmp/b", Subtree: true},
		{Kind: capability.FSWrite, Path: "/tmp/l"},
		{Kind: capability.FSRead, Path: "/etc/c"},
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateComparable(netip.Addr{})); diff != "" {
		t.Errorf("derived (-want +got):\n%s", diff)
	}
}

func FuzzParse(f *testing.F) {
	if data, err := os.ReadFile("testdata/mail.yaml"); err == nil {
		f.Add(data)
	}
	f.Add([]byte("version: 1\ntools:\n  t:\n    tier: mutating\n    args:\n      - {pointer: /p/*, kind: exec}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tab, err := Parse("f.yaml", data)
		if err != nil {
			return
		}
		for name, b := range tab {
			if b == nil || b.Tool != name {
				t.Fatalf("table entry %q = %v", name, b)
			}
			for _, a := range b.Args {
				if a.Kind < capability.FSRead || a.Kind > capability.ID {
					t.Fatalf("accepted kind %v", a.Kind)
				}
				if (a.Kind == capability.ID) != (a.IDKind != "") {
					t.Fatalf("accepted id_kind %q on %v", a.IDKind, a.Kind)
				}
				if a.Subtree && a.Kind != capability.FSRead && a.Kind != capability.FSWrite {
					t.Fatalf("accepted subtree on %v", a.Kind)
				}
			}
		}
	})
}

// TestParsePrompts: a file's prompts bind as its tools do, each table apart:
// a prompt and a tool of one name are two bindings.
func TestParsePrompts(t *testing.T) {
	src := "version: 1\ntools:\n  run:\n    tier: read-only\nprompts:\n  run:\n    tier: mutating\n    args:\n      - {pointer: /command, kind: exec}\n  show:\n    tier: data-read\n    args:\n      - {pointer: /file, kind: fs.read}\n"
	tools, prompts, err := ParseFile("b.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 1 || tools["run"].Tier != capability.TierReadOnly || len(tools["run"].Args) != 0 {
		t.Errorf("tools %v", tools)
	}
	if len(prompts) != 2 || prompts["run"].Tier != capability.TierMutating || prompts["run"].Args[0].Kind != capability.Exec || prompts["show"].Args[0].Kind != capability.FSRead {
		t.Errorf("prompts %v", prompts)
	}
	// A file of prompts only.
	if tools, prompts, err := ParseFile("b.yaml", []byte("version: 1\nprompts:\n  p: {tier: read-only}\n")); err != nil || len(tools) != 0 || len(prompts) != 1 {
		t.Errorf("prompts only: %v %v %v", tools, prompts, err)
	}
}

// TestFileValues: a tool's values and a flagged id reach its binding.
func TestFileValues(t *testing.T) {
	tb, _, err := ParseFile("b.yaml", []byte("version: 1\ntools:\n  pay:\n    tier: mutating\n    args:\n      - {pointer: /payee, kind: id, id_kind: bank.payee, provenance: flag}\n    values:\n      - {pointer: /amount, name: amount}\n      - {pointer: /lines/*/sum, name: sums}\n"))
	if err != nil {
		t.Fatal(err)
	}
	b := tb["pay"]
	if len(b.Values) != 2 || b.Values[0].Name != "amount" || b.Values[1].Name != "sums" || !b.Args[0].FlagUnproven {
		t.Fatalf("binding %+v", b)
	}
	var doc args.Doc
	if err := doc.Decode([]byte(`{"payee":"p","amount":12.5,"lines":[{"sum":1},{"sum":"x"},{"sum":{}}]}`), nil); err != nil {
		t.Fatal(err)
	}
	vals := b.ValuesOf(doc.Root())
	// The sum that is an object is its JSON text: present, and no number.
	if sums := vals["sums"].([]any); vals["amount"] != 12.5 || len(sums) != 3 || sums[0] != int64(1) || sums[1] != "x" || sums[2] != "{}" {
		t.Errorf("values %#v: want amount 12.5, and the sums 1, \"x\" and {} as text", vals)
	}
}
