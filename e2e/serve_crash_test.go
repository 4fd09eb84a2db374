package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestServeCrashUnderLoad kills aegis serve with SIGKILL while sessions
// are calling: every call a client saw forwarded has its entry, signed or
// acknowledged, the chain is at most cut short (never broken), and a
// restarted aegis serve signs what the crash left and goes on.
func TestServeCrashUnderLoad(t *testing.T) {
	dir := tempDir(t)
	cmd, _ := json.Marshal([]string{aegisBin, "demo-server", "--quiet", "--root", dir})
	for name, text := range map[string]string{
		"aegis.yaml":    strings.Replace(crashConfig, "    schema: off", "    schema: off\n    command: "+string(cmd), 1) + "serve:\n  auth: {none: alice}\n",
		"bindings.yaml": crashBindings, "policy.yaml": crashPolicy,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	state := filepath.Join(dir, "state")
	env := baseEnv(dir, state)
	s := startServe(t, env, filepath.Join(dir, "aegis.yaml"), "demo")

	const sessions, workers, killAfter = 3, 8, 150
	var mu sync.Mutex
	var seen []string
	killed := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Every session first, then the load: the kill comes fast.
	var css []*mcp.ClientSession
	for range sessions {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "crash", Version: "1"}, nil).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.urls["demo"], MaxRetries: -1}, nil)
		if err != nil {
			t.Fatalf("connect: %v\n%s", err, s.stderr)
		}
		defer cs.Close()
		css = append(css, cs)
	}
	for i, cs := range css {
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := 0; ; n++ {
					select {
					case <-killed:
						return
					default:
					}
					text := fmt.Sprintf("s%d-w%d-%d", i, w, n)
					res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
					if err != nil {
						return
					}
					if !res.IsError && len(res.Content) == 1 {
						if tc, ok := res.Content[0].(*mcp.TextContent); ok && tc.Text == text {
							mu.Lock()
							seen = append(seen, text)
							if len(seen) == killAfter {
								once.Do(func() {
									s.cmd.Process.Kill() // SIGKILL: no chance to flush or clean up
									close(killed)
								})
							}
							mu.Unlock()
						}
					}
				}
			}()
		}
	}
	wg.Wait()
	<-s.done
	if len(seen) < killAfter {
		t.Fatalf("only %d calls were answered before the kill", len(seen))
	}

	rep, _ := checkCrashedChain(t, filepath.Join(state, "chain", "demo"), seen)
	t.Logf("killed after %d answers; chain: %d entries, %d signed, acked to %d (%v)", len(seen), rep.Entries, rep.Signed, rep.Acked, rep.AckChecked)

	// A restart signs what the crash left, and goes on.
	s2 := startServe(t, env, filepath.Join(dir, "aegis.yaml"), "demo")
	ctx2, cancel2 := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel2()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "crash", Version: "1"}, nil).
		Connect(ctx2, &mcp.StreamableClientTransport{Endpoint: s2.urls["demo"]}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := cs.CallTool(ctx2, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "after"}}); err != nil || res.IsError {
		t.Fatalf("after the restart: %v %+v", err, res)
	}
	cs.Close()
	s2.stop(t)
	if out, code := aegisCLI(t, env, "verify", "--server", "demo"); code != 0 {
		t.Errorf("aegis verify after the restart: exit %d: %s", code, out)
	}
}
