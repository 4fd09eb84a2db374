package e2e

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aegis-mcp/aegis/internal/pgtest"
)

// TestServeExample runs examples/serve/serve.sh as the README tells a new
// user to, alone (SQLite) and with --replicas (two replicas on
// PostgreSQL), and then every command it prints, as printed: the official
// Go SDK client (examples/serve/client) calling both servers with each
// principal's key, a call held for a person and approved with `aegis
// approvals`, `aegis log` showing the decisions by principal and role,
// /metrics, and, after Ctrl-C, `aegis verify` of every lane.
func TestServeExample(t *testing.T) {
	repo := filepath.Dir(e2eDir)
	client := filepath.Join(t.TempDir(), "client")
	build := exec.Command("go", "build", "-o", client, "./examples/serve/client")
	build.Dir = repo
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the example client: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		name  string
		flags []string
		bases int // the replicas the script should report
	}{
		{"alone", nil, 1},
		{"replicas", []string{"--replicas"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			work := tempDir(t)
			env := baseEnv(tempDir(t), filepath.Join(work, "ignored"))
			env = append(env, "AEGIS_BIN="+aegisBin, "AEGIS_SERVE_DIR="+work, "AEGIS_SERVE_LISTEN=127.0.0.1:0")
			if tc.bases > 1 {
				env = append(env, "AEGIS_PG_URL="+pgtest.Schema(t, pgtest.URL(t)))
			}
			script := exec.Command("bash", append([]string{filepath.Join(repo, "examples/serve/serve.sh")}, tc.flags...)...)
			script.Dir, script.Env, script.Stderr = repo, env, os.Stderr
			stdout, err := script.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := script.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- script.Wait() }()
			stopped := false
			stop := func() {
				if stopped {
					return
				}
				stopped = true
				script.Process.Signal(syscall.SIGINT) // Ctrl-C, as the script says
				select {
				case err := <-done:
					if err != nil && !isSignalExit(err) {
						t.Errorf("serve.sh after Ctrl-C: %v", err)
					}
				case <-time.After(60 * time.Second):
					script.Process.Kill()
					t.Error("serve.sh did not stop within 60 s of Ctrl-C")
				}
			}
			defer stop()

			msg := readUntil(t, stdout, "Ctrl-C stops aegis serve.", 120*time.Second)
			go io.Copy(io.Discard, stdout)
			t.Logf("serve.sh said:\n%s", msg)

			bases := regexp.MustCompile(`(?m)^  (http://127\.0\.0\.1:\d+)/mcp/notes  \S+/mcp/web$`).FindAllStringSubmatch(msg, -1)
			if len(bases) != tc.bases {
				t.Fatalf("serve.sh names %d endpoints, want %d", len(bases), tc.bases)
			}
			alice := submatch(t, msg, `alice, role writer: (\S+)`)
			bob := submatch(t, msg, `bob,   role reader: (\S+)`)

			// Every client command, as printed, with the client built above
			// for `go run`. A "# refused" command must exit 1 with aegis's
			// refusal, any other 0; the one that waits for a person runs in
			// the background until the approval below.
			var held *exec.Cmd
			var heldOut strings.Builder
			clientLines := 0
			for _, line := range strings.Split(msg, "\n") {
				cmdline, ok := strings.CutPrefix(strings.TrimSpace(line), "go run ./examples/serve/client ")
				if !ok {
					continue
				}
				clientLines++
				c := exec.Command("bash", "-c", client+" "+cmdline)
				c.Dir, c.Env = repo, env
				if strings.Contains(cmdline, "# waits for a person") {
					c.Stdout, c.Stderr = &heldOut, &heldOut
					if err := c.Start(); err != nil {
						t.Fatal(err)
					}
					held = c
					continue
				}
				out, err := c.CombinedOutput()
				refused := strings.Contains(cmdline, "# refused")
				switch {
				case refused && (exitCode(err) != 1 || !strings.HasPrefix(string(out), "ERROR: aegis denied this call")):
					t.Errorf("%s\nwas to be refused by aegis; exit %v:\n%s", cmdline, err, out)
				case !refused && err != nil:
					t.Errorf("%s\nfailed: %v\n%s", cmdline, err, out)
				}
			}
			if clientLines != 5 || held == nil {
				t.Fatalf("serve.sh printed %d client commands (want 5), one waiting for a person: %v", clientLines, held != nil)
			}

			// The held call, answered from another terminal as printed.
			list := cliLine(t, msg, "approvals list")
			var id string
			deadline := time.Now().Add(30 * time.Second)
			for id == "" && time.Now().Before(deadline) {
				out, err := shell(repo, env, list)
				if err != nil {
					t.Fatalf("%s: %v\n%s", list, err, out)
				}
				if m := regexp.MustCompile(`(?m)^([0-9a-f]{16})  .*notes/read_file  principal alice`).FindStringSubmatch(out); m != nil {
					id = m[1]
				} else {
					time.Sleep(100 * time.Millisecond)
				}
			}
			if id == "" {
				t.Fatal("no held call was listed by aegis approvals")
			}
			approve := strings.Replace(cliLine(t, msg, "approvals approve"), " ID", " "+id, 1)
			if out, err := shell(repo, env, approve); err != nil {
				t.Fatalf("%s: %v\n%s", approve, err, out)
			}
			heldDone := make(chan error, 1)
			go func() { heldDone <- held.Wait() }()
			select {
			case err := <-heldDone:
				if err != nil || !strings.Contains(heldOut.String(), "Plan: not for everyone's eyes yet.") {
					t.Errorf("the approved call: %v\n%s", err, heldOut.String())
				}
			case <-time.After(30 * time.Second):
				held.Process.Kill()
				t.Fatal("the approved call did not finish")
			}

			// The metrics of every replica, with a key, as printed (curl).
			curl := submatch(t, msg, `curl -s -H 'Authorization: Bearer (\S+)' (\S+)/metrics`)
			if curl != alice {
				t.Errorf("the metrics command uses key %q, not alice's", curl)
			}
			for _, b := range bases {
				req, _ := http.NewRequest("GET", b[1]+"/metrics", nil)
				req.Header.Set("Authorization", "Bearer "+bob)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || !regexp.MustCompile(`(?m)^aegis_decisions_total\{.*server="notes".*\} [1-9]`).Match(body) {
					t.Errorf("%s/metrics: %s\n%.2000s", b[1], resp.Status, body)
				}
			}

			// The decisions by principal and role.
			log, err := shell(repo, env, cliLine(t, msg, " log"))
			if err != nil {
				t.Fatalf("aegis log: %v\n%s", err, log)
			}
			for _, want := range []string{
				`allow notes/read_file alice \(roles writer\)`,
				`deny  notes/echo bob \(roles reader\)\n.*no rule allows tool "echo"`,
				`allow notes/echo alice \(roles writer\)`,
				`deny  web/fetch bob \(roles reader\)\n.*169\.254\.169\.254.*\n.*rule "no-internal"`,
				`ask   notes/read_file alice \(roles writer\)`,
				`allow notes/read_file alice \(roles writer\)\n.*drafts/plan.txt\n.*approved by \S+ through cli`,
			} {
				if !regexp.MustCompile(want).MatchString(log) {
					t.Errorf("aegis log does not show %s:\n%s", want, log)
				}
			}
			if tc.bases > 1 && !strings.Contains(log, "@2 ") {
				t.Errorf("aegis log shows no entry of the second replica's lane:\n%s", log)
			}

			stop()
			if out, err := shell(repo, env, cliLine(t, msg, " verify")); err != nil {
				t.Errorf("aegis verify after Ctrl-C: %v\n%s", err, out)
			}
		})
	}
}

// readUntil reads r until a line holding end, and returns what it read.
func readUntil(t *testing.T, r io.Reader, end string, timeout time.Duration) string {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		var b strings.Builder
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), end) {
				break
			}
		}
		got <- b.String()
	}()
	select {
	case s := <-got:
		if !strings.Contains(s, end) {
			t.Fatalf("the output ended before %q:\n%s", end, s)
		}
		return s
	case <-time.After(timeout):
		t.Fatalf("no %q within %v", end, timeout)
	}
	return ""
}

func submatch(t *testing.T, s, re string) string {
	t.Helper()
	m := regexp.MustCompile(re).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("no %s in:\n%s", re, s)
	}
	return m[1]
}

// cliLine is the command line the script printed that holds what.
func cliLine(t *testing.T, msg, what string) string {
	t.Helper()
	for _, line := range strings.Split(msg, "\n") {
		if l := strings.TrimSpace(line); strings.HasPrefix(l, "AEGIS_HOME=") && strings.Contains(l, what) {
			return l
		}
	}
	t.Fatalf("serve.sh printed no command with %q", what)
	return ""
}

func shell(dir string, env []string, line string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, "bash", "-c", line)
	c.Dir, c.Env = dir, env
	out, err := c.CombinedOutput()
	return string(out), err
}

func exitCode(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err == nil {
		return 0
	}
	return -1
}

func isSignalExit(err error) bool {
	ee, ok := err.(*exec.ExitError)
	if !ok {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && (ws.Signaled() || ws.ExitStatus() == 130 || ws.ExitStatus() == 143)
}
