package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aegis-mcp/aegis/internal/chain"
	"github.com/aegis-mcp/aegis/internal/record"
	"github.com/aegis-mcp/aegis/internal/sandbox"
	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	if sandbox.IsInit() { // a sandbox's init, re-exec'd from the test binary
		os.Exit(sandbox.Init())
	}
	testscript.Main(m, map[string]func(){
		"aegis":    func() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) },
		"mcpdrive": func() { os.Exit(mcpDrive(os.Args[1:])) },
		"forge":    func() { os.Exit(forge(os.Args[1:])) },
	})
}

// forge DIR REASON appends to the chain in DIR an entry after its last,
// linked and hashed as aegis would write it but signed by nothing: what
// anybody who can write the file can do. It copies the last entry's axes
// with a new reason.
func forge(argv []string) int {
	if len(argv) != 2 {
		fmt.Fprintln(os.Stderr, "usage: forge DIR REASON")
		return 2
	}
	var last record.Entry
	if err := chain.Scan(argv[0], func(e *record.Entry) error { last = *e; return nil }); err != nil {
		fmt.Fprintln(os.Stderr, "forge:", err)
		return 1
	}
	e := last
	e.Seq, e.Prev, e.Reason, e.Decision = last.Seq+1, last.Hash, argv[1], record.Allow
	h, err := e.ComputeHash()
	if err != nil {
		fmt.Fprintln(os.Stderr, "forge:", err)
		return 1
	}
	e.Hash = h
	line, err := e.MarshalJSON()
	if err != nil {
		fmt.Fprintln(os.Stderr, "forge:", err)
		return 1
	}
	segs, _ := filepath.Glob(filepath.Join(argv[0], "chain-*.jsonl"))
	if len(segs) == 0 {
		fmt.Fprintln(os.Stderr, "forge: no segment")
		return 1
	}
	f, err := os.OpenFile(segs[len(segs)-1], os.O_WRONLY|os.O_APPEND, 0)
	if err == nil {
		_, err = f.Write(append(line, '\n'))
		f.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "forge:", err)
		return 1
	}
	return 0
}

// TestScripts runs the CLI scenarios in testdata/script: each is a txtar
// archive of files and commands with expected output (testscript).
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		UpdateScripts:       os.Getenv("UPDATE_SCRIPTS") != "",
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			root, err := filepath.Abs("../..")
			env.Setenv("REPO", root)
			// The commands are this test binary, built with -race: a
			// race-enabled process that exits 0 first sleeps a second
			// (GORACE's atexit_sleep_ms), and a script runs dozens, some
			// nested (mcpdrive, aegis run, its server). A race still
			// fails the command: the process exits 66 instead of 0.
			env.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
			return err
		},
	})
}

// mcpDrive is a scripted MCP client for the CLI scripts: it starts argv,
// sends it the JSON-RPC lines of its own stdin, prints every line the
// command answers, and closes the command's stdin only once every request
// has its response, so no script depends on timing. A line "#wait" holds
// the lines after it until every request before it has its response;
// "#touch FILE" creates FILE, and "#await FILE" holds the lines after it
// until FILE exists, so that two drivers in one script can take turns
// (before the first request, it holds the command's start).
func mcpDrive(argv []string) int {
	var lines []string
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	for len(lines) > 0 && strings.HasPrefix(lines[0], "#await ") {
		if f := strings.TrimPrefix(lines[0], "#await "); !await(f) {
			fmt.Fprintf(os.Stderr, "mcpdrive: %s did not appear\n", f)
			return 1
		}
		lines = lines[1:]
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var (
		mu      sync.Mutex
		cond    = sync.NewCond(&mu)
		pending = map[string]bool{}
		done    bool
	)
	go func() {
		rd := bufio.NewScanner(out)
		rd.Buffer(nil, 16<<20)
		for rd.Scan() {
			fmt.Printf("%s\n", rd.Bytes())
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(rd.Bytes(), &m) == nil && m.Method == "" {
				mu.Lock()
				delete(pending, string(m.ID))
				cond.Broadcast()
				mu.Unlock()
			}
		}
		mu.Lock()
		done = true
		cond.Broadcast()
		mu.Unlock()
	}()
	// settle waits until every request sent has its response (or the
	// command's output ended).
	settle := func() {
		mu.Lock()
		for len(pending) > 0 && !done {
			cond.Wait()
		}
		mu.Unlock()
	}
	for _, line := range lines {
		if line == "#wait" { // a line of its own: answer everything sent so far first
			settle()
			continue
		}
		if f, ok := strings.CutPrefix(line, "#touch "); ok {
			if err := os.WriteFile(f, nil, 0o644); err != nil {
				fmt.Fprintln(os.Stderr, "mcpdrive:", err)
				return 1
			}
			continue
		}
		if f, ok := strings.CutPrefix(line, "#await "); ok {
			if !await(f) {
				fmt.Fprintf(os.Stderr, "mcpdrive: %s did not appear\n", f)
				return 1
			}
			continue
		}
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal([]byte(line), &m) == nil && m.ID != nil {
			mu.Lock()
			pending[string(m.ID)] = true
			mu.Unlock()
		}
		fmt.Fprintf(in, "%s\n", line)
	}
	settle()
	in.Close()
	mu.Lock()
	for !done {
		cond.Wait()
	}
	unanswered := len(pending)
	mu.Unlock()
	if err := cmd.Wait(); err != nil {
		fmt.Fprintln(os.Stderr, "mcpdrive:", err)
		return 1
	}
	if unanswered > 0 {
		fmt.Fprintf(os.Stderr, "mcpdrive: no response to %d requests\n", unanswered)
		return 1
	}
	return 0
}

// await waits for file to exist, for a minute at most.
func await(file string) bool {
	for range 6000 {
		if _, err := os.Stat(file); err == nil {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}
