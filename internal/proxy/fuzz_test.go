package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	"github.com/aegis-mcp/aegis/internal/args"
)

var fuzzSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/a"}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call","params":{"name":"x"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/list","Method":"tools/call","params":{"name":"x"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"x","arguments":{}}}`,
	`{"jsonrpc":"2.0","id":"a","method":"ping"}`,
	`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
	`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"x"}]`,
	`{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","argumentſ":{"p":1}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"p":1,"P":2}}}`,
}

// laxMessage is how a lenient peer decodes a message: Go's encoding/json
// matches keys case-insensitively and lets the last duplicate win.
type laxMessage struct {
	Method string
	Params struct {
		Name      string
		Arguments map[string]any
	}
}

// FuzzParseMessage checks the relay's reading of a message against a lenient
// decoder's: whenever the relay accepts a message, the lenient decoder must
// not find a tools/call in it that the relay did not, nor a different tool
// or different arguments.
func FuzzParseMessage(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := parseMessage(data, 64)
		if err != nil || m.kind == kindBatch {
			return
		}
		var lax laxMessage
		if json.Unmarshal(data, &lax) != nil {
			return
		}
		if lax.Method == "tools/call" && m.class != classToolsCall {
			t.Fatalf("%q: a lenient peer reads tools/call, the relay reads %q", data, m.method)
		}
		if m.class != classToolsCall || m.kind != kindRequest {
			return
		}
		call, _, err := parseCall(data, m)
		if err != nil {
			return
		}
		if lax.Params.Name != call.Tool {
			t.Fatalf("%q: a lenient peer calls %q, the gate sees %q", data, lax.Params.Name, call.Tool)
		}
		var gated map[string]any
		if err := json.Unmarshal(call.Arguments, &gated); err != nil {
			t.Fatalf("%q: gate's arguments %s: %v", data, call.Arguments, err)
		}
		if lax.Params.Arguments == nil {
			lax.Params.Arguments = map[string]any{}
		}
		if !reflect.DeepEqual(lax.Params.Arguments, gated) {
			t.Fatalf("%q: a lenient peer reads arguments %v, the gate sees %v", data, lax.Params.Arguments, gated)
		}
	})
}

// FuzzRelayClientMessage feeds one client line to a relay and checks what
// reaches the server: either the line, unchanged, or a tools/call the gate
// decided. Nothing the relay writes, to either side, is invalid JSON.
func FuzzRelayClientMessage(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if bytes.ContainsAny(data, "\n") {
			return // one line only
		}
		var toClient, toServer syncBuffer
		gate := &testGate{}
		r := newRelay(context.Background(), &toClient, &toServer, gate,
			options{maxMsg: 1 << 16, maxDepth: 64, maxReqs: 8, log: slog.New(slog.DiscardHandler)})
		r.clientLoop(bytes.NewReader(data))
		r.gates.Wait()

		line := append(bytes.Clone(data), '\n')
		for _, out := range lines(toServer.String()) {
			if out+"\n" != string(line) {
				t.Fatalf("server received %q, which is not the client's %q", out, data)
			}
			m, err := parseMessage([]byte(out), 64)
			if err != nil {
				t.Fatalf("server received invalid %q: %v", out, err)
			}
			if m.class == classToolsCall && len(gate.seen()) == 0 {
				t.Fatalf("server received a tools/call the gate never saw: %q", out)
			}
		}
		for _, out := range lines(toClient.String()) {
			if _, err := args.Validate([]byte(out), 64); err != nil {
				t.Fatalf("client received invalid %q: %v", out, err)
			}
		}
	})
}

// FuzzRelayServerMessage feeds a server line answering a pending tools/call
// and a pending tools/list to a relay with checkers, and checks the client
// receives only valid JSON, and no result the checker did not see.
func FuzzRelayServerMessage(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"a"}]}}`))
	f.Add([]byte(`[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if bytes.ContainsAny(data, "\n") {
			return
		}
		var toClient, toServer syncBuffer
		checked := 0
		gate := &checkingGate{
			testGate: &testGate{},
			tools:    func(ts []json.RawMessage) ([]json.RawMessage, error) { checked++; return ts[:len(ts)/2], nil },
			result:   func(*Call, json.RawMessage) (json.RawMessage, error) { checked++; return nil, nil },
		}
		r := newRelay(context.Background(), &toClient, &toServer, gate,
			options{maxMsg: 1 << 16, maxDepth: 64, maxReqs: 8, log: slog.New(slog.DiscardHandler)})
		r.clientLoop(strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}` + "\n" +
			`{"jsonrpc":"2.0","id":2,"method":"tools/list"}` + "\n"))
		r.gates.Wait()
		r.serverLoop(bytes.NewReader(data))

		for _, out := range lines(toClient.String()) {
			m, err := parseMessage([]byte(out), 64)
			if err != nil {
				t.Fatalf("client received invalid %q: %v", out, err)
			}
			if m.kind == kindResponse && m.result.ok() && checked == 0 && string(m.id) != "null" {
				if k, _ := responseKey(m.id); k == "1" || k == "2" {
					t.Fatalf("client received a result no checker saw: %q", out)
				}
			}
		}
	})
}

func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
