package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"aegis":    func() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) },
		"mcpdrive": func() { os.Exit(mcpDrive(os.Args[1:])) },
	})
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
			return err
		},
	})
}

// mcpDrive is a scripted MCP client for the CLI scripts: it starts argv,
// sends it the JSON-RPC lines of its own stdin, prints every line the
// command answers, and closes the command's stdin only once every request
// has its response, so no script depends on timing.
func mcpDrive(argv []string) int {
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
	pending := map[string]bool{}
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(sc.Bytes(), &m) == nil && m.ID != nil {
			pending[string(m.ID)] = true
		}
		fmt.Fprintf(in, "%s\n", sc.Bytes())
	}
	rd := bufio.NewScanner(out)
	rd.Buffer(nil, 16<<20)
	for len(pending) > 0 && rd.Scan() {
		fmt.Printf("%s\n", rd.Bytes())
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(rd.Bytes(), &m) == nil && m.Method == "" {
			delete(pending, string(m.ID))
		}
	}
	in.Close()
	for rd.Scan() {
		fmt.Printf("%s\n", rd.Bytes())
	}
	if err := cmd.Wait(); err != nil {
		fmt.Fprintln(os.Stderr, "mcpdrive:", err)
		return 1
	}
	if len(pending) > 0 {
		fmt.Fprintf(os.Stderr, "mcpdrive: no response to %d requests\n", len(pending))
		return 1
	}
	return 0
}
