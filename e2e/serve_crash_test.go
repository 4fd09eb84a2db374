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

	"github.com/aegis-mcp/aegis/internal/chain"
	"github.com/aegis-mcp/aegis/internal/pgtest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestServeCrashUnderLoad kills aegis serve with SIGKILL while sessions
// are calling: every call a client saw forwarded has its entry, signed or
// acknowledged, the chain is at most cut short (never broken), and a
// restarted aegis serve signs what the crash left and goes on.
func TestServeCrashUnderLoad(t *testing.T) {
	serveCrash(t, "")
}

// TestServeReplicasCrash: two aegis serve replicas on one PostgreSQL and
// one state directory, each writing its own lane of the server's chain,
// both under load; replica A is killed with SIGKILL. Every call a client
// of A saw forwarded has its entry in A's lane, B's lane is whole, and
// after A's restart `aegis verify` checks both lanes.
func TestServeReplicasCrash(t *testing.T) {
	serveCrash(t, pgtest.Schema(t, pgtest.URL(t)))
}

// serveCrash is TestServeCrashUnderLoad with one aegis serve, or, given a
// PostgreSQL URL, with two replicas sharing it and the state directory
// (the first is killed).
func serveCrash(t *testing.T, postgres string) {
	dir := tempDir(t)
	cmd, _ := json.Marshal([]string{aegisBin, "demo-server", "--quiet", "--root", dir})
	config := strings.Replace(crashConfig, "    schema: off", "    schema: off\n    command: "+string(cmd), 1) + "serve:\n  auth: {none: alice}\n"
	replicas := 1
	if postgres != "" {
		config += "state: {postgres: '" + postgres + "'}\n"
		replicas = 2
	}
	for name, text := range map[string]string{"aegis.yaml": config, "bindings.yaml": crashBindings, "policy.yaml": crashPolicy} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	state := filepath.Join(dir, "state")
	env := baseEnv(dir, state)
	// One after the other, so that replica i writes lane i+1.
	var servers []*served
	for range replicas {
		s := startServe(t, env, filepath.Join(dir, "aegis.yaml"), "demo")
		servers = append(servers, s)
	}
	victim := servers[0]

	const sessions, workers, killAfter = 3, 8, 150
	var mu sync.Mutex
	seen := make([][]string, replicas) // by replica
	killed := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Every session first, then the load: the kill comes fast.
	type client struct {
		cs      *mcp.ClientSession
		replica int
	}
	var clients []client
	for r, s := range servers {
		for range sessions {
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "crash", Version: "1"}, nil).
				Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.urls["demo"], MaxRetries: -1}, nil)
			if err != nil {
				t.Fatalf("connect: %v\n%s", err, s.stderr)
			}
			defer cs.Close()
			clients = append(clients, client{cs, r})
		}
	}
	for i, c := range clients {
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
					text := fmt.Sprintf("r%d-s%d-w%d-%d", c.replica, i, w, n)
					res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
					if err != nil {
						return
					}
					if res.IsError || resultText(res) != text {
						continue
					}
					mu.Lock()
					seen[c.replica] = append(seen[c.replica], text)
					if len(seen[0]) == killAfter {
						once.Do(func() {
							victim.cmd.Process.Kill() // SIGKILL: no chance to flush or clean up
							close(killed)
						})
					}
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	<-victim.done
	if len(seen[0]) < killAfter {
		t.Fatalf("only %d calls were answered before the kill", len(seen[0]))
	}

	root := filepath.Join(state, "chain")
	lane1 := chain.LaneDir(root, "demo", 1) // and the key of every lane
	rep, _ := checkCrashedChain(t, lane1, lane1, seen[0])
	t.Logf("killed after %d answers; lane 1: %d entries, %d signed, acked to %d (%v)", len(seen[0]), rep.Entries, rep.Signed, rep.Acked, rep.AckChecked)
	for r := 1; r < replicas; r++ {
		// The replicas that live on end as they do: their lanes whole.
		servers[r].stop(t)
		rep, kept := checkCrashedChain(t, chain.LaneDir(root, "demo", r+1), lane1, seen[r])
		if kept != rep.Entries {
			t.Errorf("lane %d of a replica that stopped: %d entries, %d signed or acknowledged", r+1, rep.Entries, kept)
		}
		t.Logf("replica %d: %d answers, lane %d: %d entries", r+1, len(seen[r]), r+1, rep.Entries)
	}

	// A restart signs what the crash left (it takes the first free lane,
	// the crashed one), and goes on.
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
	out, code := aegisCLI(t, env, "verify", "--server", "demo")
	if code != 0 {
		t.Errorf("aegis verify after the restart: exit %d: %s", code, out)
	}
	if got := strings.Count(out, "chain "); got != replicas {
		t.Errorf("aegis verify checked %d lanes, want %d:\n%s", got, replicas, out)
	}
}
