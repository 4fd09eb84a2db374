package e2e

import (
	"bufio"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aegis-mcp/aegis/internal/chain"
	"github.com/aegis-mcp/aegis/internal/record"
)

const crashConfig = `version: 1
policy: policy.yaml
servers:
  demo:
    bindings: bindings.yaml
    schema: off   # the load calls echo without listing the tools first
`

const crashBindings = `version: 1
tools:
  echo: {tier: read-only}
`

const crashPolicy = `version: 1
rules:
  - {id: demo-tools, effect: allow, server: demo, tool: echo}
`

// TestCrashUnderLoad kills aegis with SIGKILL while many calls are in
// flight, then checks what R25 promises: the chain verifies (cut short at
// the tail at most, never broken), every call the client saw forwarded has
// its entry, and a restarted aegis continues the chain.
func TestCrashUnderLoad(t *testing.T) {
	dir := tempDir(t)
	for name, text := range map[string]string{"aegis.yaml": crashConfig, "bindings.yaml": crashBindings, "policy.yaml": crashPolicy} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	state := filepath.Join(dir, "state")
	env := baseEnv(dir, state)

	const calls, killAfter = 1000, 100 // under MaxInFlight (1024): no call is refused for load
	seen := runUntilKilled(t, env, dir, calls, killAfter)
	if len(seen) < killAfter {
		t.Fatalf("only %d calls were answered before the kill; the test needs %d", len(seen), killAfter)
	}

	chainDir := filepath.Join(state, "chain", "demo")
	pub := readKey(t, chainDir)
	rep, kept := checkCrashedChain(t, chainDir, chainDir, seen)
	t.Logf("killed after %d answers of %d calls; chain: %d entries, %d signed, acked to %d (%v), %d torn bytes", len(seen), calls, rep.Entries, rep.Signed, rep.Acked, rep.AckChecked, rep.TornBytes)

	// A restart keeps and signs exactly those, and goes on.
	again := runUntilKilled(t, env, dir, 5, -1)
	if len(again) != 5 {
		t.Fatalf("after the restart %d of 5 calls were answered", len(again))
	}
	rep2, err := chain.Verify(chainDir, pub)
	if err != nil {
		t.Fatalf("verify after the restart: %v", err)
	}
	if rep2.Entries != kept+5 || rep2.Truncated() {
		t.Fatalf("after the restart: %d entries, want the %d signed or acknowledged before and 5 more; truncated %v", rep2.Entries, kept, rep2.Truncated())
	}
}

// checkCrashedChain checks what R25 promises of the chain in chainDir
// after a SIGKILL: at most cut short, never broken, and an allow entry,
// signed or acknowledged, for each call whose echo text a client saw
// answered. It returns the verification and the last seq a restart keeps.
func checkCrashedChain(t *testing.T, chainDir, keyDir string, seen []string) (chain.Report, uint64) {
	t.Helper()
	// With the private key, verify also checks the ack line after the last
	// checkpoint: what the crashed writer acknowledged and had not signed.
	// keyDir holds the keys: the chain's own, or its first lane's.
	rep, err := chain.VerifyWith(chainDir, readKey(t, keyDir), &chain.VerifyOptions{AckKey: readPrivateKey(t, keyDir)})
	var be *chain.BreakError
	if errors.As(err, &be) {
		t.Fatalf("after SIGKILL the chain is broken, not just cut short: %v", err)
	}
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	// What a restart keeps: the entries signed, or acknowledged by an ack
	// line of this key. Entries after that were written but never
	// acknowledged (the kill cut their batch's ack), so no call of theirs
	// was forwarded, and a restart cuts them.
	kept := rep.Signed
	if rep.AckChecked && rep.Acked > kept {
		kept = rep.Acked
	}
	recorded := map[[32]byte]string{}
	if err := chain.Scan(chainDir, func(e *record.Entry) error {
		if e.Seq <= kept {
			recorded[e.ArgsHash] = e.Decision
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, text := range seen {
		if d, ok := recorded[argsHash(t, map[string]string{"text": text})]; !ok || d != record.Allow {
			t.Fatalf("a client saw %q forwarded, but the chain has no signed or acknowledged allow entry for it (%q, %v)", text, d, ok)
		}
	}
	return rep, kept
}

// runUntilKilled starts aegis in front of the demo server, pipelines calls
// echo calls, and SIGKILLs aegis once killAfter answers arrived (never, if
// negative). It returns the texts of the calls the client saw answered by
// the server.
func runUntilKilled(t *testing.T, env []string, dir string, calls, killAfter int) []string {
	t.Helper()
	argv := aegisRun(filepath.Join(dir, "aegis.yaml"), "demo", aegisBin, "demo-server", "--root", dir)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &lockedWriter{w: &stderr}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"crash","version":"1"}}}`)
	rd := bufio.NewReader(stdout)
	if _, err := rd.ReadBytes('\n'); err != nil {
		t.Fatalf("no initialize answer: %v\n%s", err, stderr.String())
	}
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	go func() {
		w := bufio.NewWriter(stdin)
		for i := 1; i <= calls; i++ {
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"call-%d"}}}`+"\n", i, i)
			if i%50 == 0 && w.Flush() != nil {
				return
			}
		}
		w.Flush()
		if killAfter < 0 {
			return // stdin is closed once every answer is in
		}
	}()
	var seen []string
	answered := 0
	for answered < calls {
		line, err := rd.ReadBytes('\n')
		if err != nil {
			break
		}
		var m struct {
			ID     int `json:"id"`
			Result *struct {
				IsError bool `json:"isError"`
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"result"`
		}
		if json.Unmarshal(line, &m) != nil || m.ID == 0 {
			continue
		}
		answered++
		if m.Result != nil && !m.Result.IsError && len(m.Result.Content) == 1 {
			seen = append(seen, m.Result.Content[0].Text)
		}
		if answered == killAfter {
			cmd.Process.Kill() // SIGKILL: no chance to flush or clean up
		}
	}
	stdin.Close()
	io.Copy(io.Discard, rd)
	cmd.Wait()
	return seen
}

func readKey(t *testing.T, dir string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, chain.PublicKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	pub, err := chain.ParsePublicKey(b)
	if err != nil {
		t.Fatal(err)
	}
	return pub
}

// readPrivateKey reads the chain's signing key from dir.
func readPrivateKey(t *testing.T, dir string) ed25519.PrivateKey {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, chain.PrivateKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	priv, err := chain.ParsePrivateKey(b)
	if err != nil {
		t.Fatal(err)
	}
	return priv
}

// argsHash is the args_hash SPEC.md defines: SHA-256 over a domain string
// and the RFC 8785 form of the arguments (for {"text": ...}, json.Marshal of
// a one-key map of a plain string is that form).
func argsHash(t *testing.T, args map[string]string) [32]byte {
	t.Helper()
	canon, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(append([]byte("aegis.args.jcs.v1\x00"), canon...))
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
