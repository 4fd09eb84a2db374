package offline

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseEvent(t *testing.T) {
	for _, tc := range []struct {
		name, line, err string
	}{
		{"a call", `{"server":"fs","tool":"read_file","arguments":{"path":"/a"}}`, ""},
		{"a result", `{"server":"fs","tool":"read_file","result":{"content":[]}}`, ""},
		{"both", `{"server":"fs","tool":"x","arguments":{},"result":{}}`, "not both"},
		{"neither", `{"server":"fs","tool":"x"}`, "needs"},
		{"no server", `{"tool":"x","arguments":{}}`, `missing "server"`},
		{"no tool", `{"server":"fs","arguments":{}}`, `missing "tool"`},
		{"duplicate key", `{"server":"fs","server":"web","tool":"x","arguments":{}}`, "duplicate"},
		{"unknown field", `{"server":"fs","tool":"x","arguments":{},"sever":1}`, "unknown field"},
		{"bad origin", `{"server":"fs","tool":"x","arguments":{},"origin":"robot"}`, "want interactive or unattended"},
		{"schema not an object", `{"server":"fs","tool":"x","arguments":{},"input_schema":[1]}`, "must be a JSON object"},
		{"not an object", `[1]`, "must be a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := ParseEvent([]byte(tc.line))
			if tc.err == "" {
				if err != nil || ev == nil {
					t.Fatalf("ParseEvent: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %v, want one containing %q", err, tc.err)
			}
		})
	}
}

// FuzzParseEvent: no line makes ParseEvent panic, and an event it accepts
// is a call or a result, naming a server and a tool, whose call has
// arguments that are JSON.
func FuzzParseEvent(f *testing.F) {
	f.Add([]byte(`{"server":"fs","tool":"read_file","arguments":{"path":"/a"},"origin":"unattended","input_schema":{"type":"object"}}`))
	f.Add([]byte(`{"server":"fs","tool":"t","result":{"content":[]}}`))
	f.Add([]byte(`{"server":"fs","tool":"t","arguments":null,"result":null}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		ev, err := ParseEvent(line)
		if err != nil {
			return
		}
		if ev.Server == "" || ev.Tool == "" {
			t.Fatalf("accepted an event without server or tool: %s", line)
		}
		if !ev.IsResult() {
			c := ev.Call()
			if !json.Valid(c.Arguments) {
				t.Fatalf("a call's arguments are not JSON: %q", c.Arguments)
			}
		}
	})
}
