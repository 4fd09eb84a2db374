package proxy

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestRunEOFWhileDeciding: calls with random gates, stdin an os.Pipe
// (raw reads), closed right after the last call; every allowed call reaches
// the server exactly once before its input closes.
func TestRunEOFWhileDeciding(t *testing.T) {
	for _, procs := range []int{1, 2, 4} {
		t.Run(fmt.Sprint("procs", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			for round := range 15 {
				dir := t.TempDir()
				got := filepath.Join(dir, "got")
				cmd := exec.Command("sh", "-c", "cat > "+got)
				inR, inW, _ := os.Pipe()
				outR, outW, _ := os.Pipe()
				go io.Copy(io.Discard, outR)
				kinds := []string{"fast", "spin", "yield", "sleep", "deny", "mutate"}
				var sent strings.Builder
				want := map[string]int{}
				n := 200 + rand.IntN(200)
				for i := range n {
					k := kinds[rand.IntN(len(kinds))]
					l := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s-%d","arguments":{"i":%d}}}`, i, k, i, i)
					sent.WriteString(l + "\n")
					if k != "deny" {
						want[l]++
					}
					if i%7 == 0 {
						p := fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":%d}}`, i)
						sent.WriteString(p + "\n")
						want[p]++
					}
				}
				go func() {
					io.WriteString(inW, sent.String())
					inW.Close()
				}()
				var logs syncBuffer
				gate := &stressGate{}
				err := Run(context.Background(), inR, outW, cmd, gate, &Options{Stderr: io.Discard, MaxInFlight: 100000, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
				inR.Close()
				outW.Close()
				if err != nil {
					t.Fatalf("Run = %v", err)
				}
				b, _ := os.ReadFile(got)
				seen := map[string]int{}
				for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
					seen[l]++
				}
				for l, c := range want {
					if seen[l] != c {
						t.Fatalf("round %d: %s seen %d times at the server, want %d; gate calls %d of %d; this call: %v\nlogs:\n%s", round, l, seen[l], c, gate.calls.Load(), n, func() any { v, _ := gate.seen.Load(toolOf(l)); return v }(), logs.String())
					}
				}
				if len(seen) != len(want) {
					t.Fatalf("round %d: server saw %d distinct lines, want %d", round, len(seen), len(want))
				}
			}
		})
	}
}

func toolOf(l string) string {
	_, after, _ := strings.Cut(l, `"name":"`)
	tool, _, _ := strings.Cut(after, `"`)
	return tool
}

// blockingWriter never returns from Write until released.
type blockingWriter struct{ release chan struct{} }

func (b blockingWriter) Write(p []byte) (int, error) { <-b.release; return len(p), nil }

// TestRunStderrBlocked: when aegis's own stderr takes nothing, Run still
// returns after the server exits (within WaitDelay's bound), and the log
// file has what the server wrote.
func TestRunStderrBlocked(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	logFile := filepath.Join(t.TempDir(), "stderr.log")
	cmd := exec.Command("sh", "-c", `printf 'x' >&2; exit 0`)
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), strings.NewReader(""), io.Discard, cmd, allowGate{}, &Options{Stderr: blockingWriter{release}, StderrLog: logFile, ShutdownGrace: 200 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	}()
	select {
	case err := <-done:
		if _, ok := err.(*ServerExitError); !ok && err != nil {
			t.Fatalf("Run = %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run has not returned 20 s after the server exited, with aegis's stderr blocked")
	}
	if b, _ := os.ReadFile(logFile); string(b) != "x" {
		t.Errorf("stderr log = %q, want %q", b, "x")
	}
}
