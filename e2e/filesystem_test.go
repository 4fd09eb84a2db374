package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aegis-mcp/aegis/internal/record"
	"github.com/google/go-cmp/cmp"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fsHome is a temporary home for the filesystem server: a project with
// files aegis lets through, and a fake SSH key it must not.
type fsHome struct {
	home      string // $HOME of aegis and the server, and the server's allowed directory
	aegisHome string
	secret    string // a random line of the fake key, which must never come out
	key       string // the fake key file's content
	env       []string
}

const allowedText = "e2e: allowed content"

func newFSHome(t *testing.T) *fsHome {
	t.Helper()
	h := &fsHome{home: tempDir(t), aegisHome: tempDir(t)}
	var b [16]byte
	rand.Read(b[:])
	h.secret = "e2e-fake-key-" + hex.EncodeToString(b[:])
	h.key = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + h.secret + "\n-----END OPENSSH PRIVATE KEY-----\n"
	files := []struct {
		path, content string
		mode          os.FileMode
	}{
		{"projects/app/main.go", "package main\n\n// " + allowedText + "\n", 0o644},
		{"projects/notes.txt", "notes: " + allowedText + "\n", 0o644},
		{"other.txt", "outside the projects\n", 0o644},
		{".ssh/id_rsa", h.key, 0o600},
	}
	for _, f := range files {
		p := filepath.Join(h.home, f.path)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f.content), f.mode); err != nil {
			t.Fatal(err)
		}
	}
	// Symbolic links inside the allowed project folder that lead out of it.
	for link, target := range map[string]string{
		"projects/link": filepath.Join(h.home, ".ssh"),
		"projects/key":  "../.ssh/id_rsa",
	} {
		if err := os.Symlink(target, filepath.Join(h.home, link)); err != nil {
			t.Fatal(err)
		}
	}
	h.env = baseEnv(h.home, h.aegisHome)
	return h
}

// fsCall is one call and what aegis must decide about it.
type fsCall struct {
	name string
	tool string
	args map[string]any
	want string // chain.Allow or chain.Deny
	// rule is a rule the refusal must name, and the chain entry list.
	rule string
	// paths are derived paths the chain entry must hold: where the call's
	// spelling really leads.
	paths []string
	// contains is text an allowed call's result must hold.
	contains string
	// flips says that testdata/filesystem/looser.yaml, which allows reads
	// anywhere in the home, would allow the refused call.
	flips bool
}

// fsCalls are the calls the filesystem tests make through aegis, in order.
func fsCalls(home string) []fsCall {
	h := func(p string) string { return filepath.Join(home, p) }
	key := h(".ssh/id_rsa")
	return []fsCall{
		{name: "read_text_file of an allowed file", tool: "read_text_file", args: map[string]any{"path": h("projects/app/main.go")}, want: record.Allow, rule: "read-projects", paths: []string{h("projects/app/main.go")}, contains: allowedText},
		{name: "read_file with a ~ path", tool: "read_file", args: map[string]any{"path": "~/projects/notes.txt"}, want: record.Allow, paths: []string{h("projects/notes.txt")}, contains: allowedText},
		{name: "read_multiple_files of allowed files", tool: "read_multiple_files", args: map[string]any{"paths": []string{h("projects/app/main.go"), h("projects/notes.txt")}}, want: record.Allow, contains: "notes: " + allowedText},
		{name: "list_directory of the projects", tool: "list_directory", args: map[string]any{"path": h("projects")}, want: record.Allow, contains: "notes.txt"},

		{name: "read_file of the key", tool: "read_file", args: map[string]any{"path": key}, want: record.Deny, rule: "no-secrets", paths: []string{key}, flips: true},
		{name: "read_file of ~/.ssh/id_rsa", tool: "read_file", args: map[string]any{"path": "~/.ssh/id_rsa"}, want: record.Deny, rule: "no-secrets", paths: []string{key}, flips: true},
		{name: "read_text_file of the key", tool: "read_text_file", args: map[string]any{"path": key}, want: record.Deny, rule: "no-secrets", paths: []string{key}, flips: true},
		{name: "read_text_file through projects/..", tool: "read_text_file", args: map[string]any{"path": h("projects") + "/../.ssh/id_rsa"}, want: record.Deny, rule: "no-secrets", paths: []string{key}, flips: true},
		{name: "read_text_file through a deeper .. and .", tool: "read_text_file", args: map[string]any{"path": h("projects/app") + "/../.././.ssh/./id_rsa"}, want: record.Deny, rule: "no-secrets", paths: []string{key}, flips: true},
		{name: "read_text_file with doubled slashes", tool: "read_text_file", args: map[string]any{"path": home + "//.ssh//id_rsa"}, want: record.Deny, rule: "no-secrets", paths: []string{key}, flips: true},
		{name: "read_text_file with head", tool: "read_text_file", args: map[string]any{"path": key, "head": 2}, want: record.Deny, rule: "no-secrets", paths: []string{key}, flips: true},
		{name: "read_multiple_files with the key among allowed files", tool: "read_multiple_files", args: map[string]any{"paths": []string{h("projects/notes.txt"), key}}, want: record.Deny, rule: "no-secrets", paths: []string{h("projects/notes.txt"), key}, flips: true},
		{name: "read_multiple_files with ~ and ..", tool: "read_multiple_files", args: map[string]any{"paths": []string{"~/projects/notes.txt", "~/projects/../.ssh/id_rsa"}}, want: record.Deny, rule: "no-secrets", paths: []string{key}, flips: true},
		{name: "read_media_file of the key", tool: "read_media_file", args: map[string]any{"path": key}, want: record.Deny, rule: "no-secrets", paths: []string{key}, flips: true},
		{name: "read_text_file through a directory symlink in the projects", tool: "read_text_file", args: map[string]any{"path": h("projects/link/id_rsa")}, want: record.Deny, rule: "no-secrets", paths: []string{key}, flips: true},
		{name: "read_text_file of a file symlink in the projects", tool: "read_text_file", args: map[string]any{"path": h("projects/key")}, want: record.Deny, rule: "no-secrets", paths: []string{key}, flips: true},
		{name: "read_multiple_files of a file symlink", tool: "read_multiple_files", args: map[string]any{"paths": []string{h("projects/key")}}, want: record.Deny, rule: "no-secrets", paths: []string{key}, flips: true},
		{name: "read_text_file through the symlink and ..", tool: "read_text_file", args: map[string]any{"path": h("projects/link") + "/../.ssh/id_rsa"}, want: record.Deny},
		{name: "get_file_info of the key", tool: "get_file_info", args: map[string]any{"path": key}, want: record.Deny, rule: "no-secrets", paths: []string{key}, flips: true},
		{name: "list_directory of ~/.ssh", tool: "list_directory", args: map[string]any{"path": h(".ssh")}, want: record.Deny, rule: "no-secrets", paths: []string{h(".ssh")}, flips: true},
		{name: "search_files in ~/.ssh", tool: "search_files", args: map[string]any{"path": h(".ssh"), "pattern": "id_*"}, want: record.Deny, rule: "no-secrets", paths: []string{h(".ssh")}, flips: true},
		{name: "directory_tree through the directory symlink", tool: "directory_tree", args: map[string]any{"path": h("projects/link")}, want: record.Deny, rule: "no-secrets", paths: []string{h(".ssh")}, flips: true},
		{name: "write_file into ~/.ssh", tool: "write_file", args: map[string]any{"path": h(".ssh/authorized_keys"), "content": "ssh-ed25519 AAAA e2e-attacker\n"}, want: record.Deny, rule: "no-secrets", paths: []string{h(".ssh/authorized_keys")}},
		{name: "write_file through the directory symlink", tool: "write_file", args: map[string]any{"path": h("projects/link/authorized_keys"), "content": "ssh-ed25519 AAAA e2e-attacker\n"}, want: record.Deny, rule: "no-secrets", paths: []string{h(".ssh/authorized_keys")}},
		{name: "move_file from the projects into ~/.ssh", tool: "move_file", args: map[string]any{"source": h("projects/notes.txt"), "destination": h(".ssh/notes.txt")}, want: record.Deny, rule: "no-secrets", paths: []string{h(".ssh/notes.txt")}},
		{name: "read_text_file outside the projects", tool: "read_text_file", args: map[string]any{"path": h("other.txt")}, want: record.Deny, paths: []string{h("other.txt")}, flips: true},
		// Relative paths, which the server resolves against its allowed
		// directory (the home, its command-line argument): so does aegis.
		{name: "read_text_file of a relative path in the projects", tool: "read_text_file", args: map[string]any{"path": "projects/notes.txt"}, want: record.Allow, rule: "read-projects", paths: []string{h("projects/notes.txt")}, contains: allowedText},
		{name: "read_text_file of the key by a relative path", tool: "read_text_file", args: map[string]any{"path": ".ssh/id_rsa"}, want: record.Deny, rule: "no-secrets", paths: []string{key}, flips: true},
		{name: "read_text_file of the key by a relative path with ..", tool: "read_text_file", args: map[string]any{"path": "projects/../.ssh/id_rsa"}, want: record.Deny, rule: "no-secrets", paths: []string{key}, flips: true},
		{name: "read_media_file of the key by ./", tool: "read_media_file", args: map[string]any{"path": "./.ssh/id_rsa"}, want: record.Deny, rule: "no-secrets", paths: []string{key}, flips: true},
	}
}

// fsResult is what a client got for one call.
type fsResult struct {
	isError bool
	text    string // the text of every text content, joined
	err     string // a JSON-RPC error instead of a result
}

// checkFSResult checks one result against what aegis must have decided.
func checkFSResult(t *testing.T, c fsCall, r fsResult) {
	t.Helper()
	switch {
	case r.err != "":
		t.Errorf("%s: the call failed: %s", c.name, r.err)
	case c.want == record.Allow && r.isError:
		t.Errorf("%s: refused, want allowed: %s", c.name, r.text)
	case c.want == record.Allow && !strings.Contains(r.text, c.contains):
		t.Errorf("%s: the result does not hold %q: %s", c.name, c.contains, r.text)
	case c.want == record.Deny && !r.isError:
		t.Errorf("%s: allowed, want refused: %s", c.name, r.text)
	case c.want == record.Deny && !strings.HasPrefix(r.text, "aegis denied this call: "):
		t.Errorf("%s: refused, but not by aegis: %s", c.name, r.text)
	case c.want == record.Deny && c.rule != "" && !strings.Contains(r.text, `"`+c.rule+`"`):
		t.Errorf("%s: the refusal does not name the rule %q: %s", c.name, c.rule, r.text)
	}
}

// TestFilesystem puts aegis in front of the official filesystem server,
// whose allowed directory is the whole temporary home (so that only aegis
// keeps the key in), and makes the same calls with the TypeScript client
// and with the Go client. Then the chain must verify and record each call
// with the decision and rule expected, and with the path the call really
// named; the fake key's content must appear nowhere.
func TestFilesystem(t *testing.T) {
	needNode(t)
	h := newFSHome(t)
	calls := fsCalls(h.home)
	config := filepath.Join(e2eDir, "testdata", "filesystem", "aegis.yaml")
	server := []string{nodeBin, filepath.Join(e2eDir, filesystemJS), h.home}
	through := aegisRun(config, "fs", server...)

	// What the clients saw, for the secret check at the end.
	var seen [][]byte

	t.Run("the key is readable without aegis", func(t *testing.T) {
		// The control: the server alone serves the key, so the refusals
		// below are aegis's.
		plan := []fsCall{calls[6], calls[7], calls[14], calls[15], calls[13]}
		r := mustDriver(t, h.env, []string{"calls", writePlan(t, plan)}, server)
		results := tsResults(t, r)
		for i, c := range plan[:4] {
			if res := results[i]; res.isError || !strings.Contains(res.text, h.secret) {
				t.Errorf("%s: without aegis the server did not return the key: %+v", c.name, res)
			}
		}
		if !bytes.Contains(r.Raw, []byte(base64.StdEncoding.EncodeToString([]byte(h.key)))) {
			t.Errorf("%s: without aegis the server did not return the key in base64: %+v", plan[4].name, results[4])
		}
	})

	t.Run("typescript client", func(t *testing.T) {
		r := mustDriver(t, h.env, []string{"calls", writePlan(t, calls)}, through)
		seen = append(seen, r.Raw, []byte(r.Stderr))
		results := tsResults(t, r)
		for i, c := range calls {
			checkFSResult(t, c, results[i])
		}
	})

	t.Run("go client", func(t *testing.T) {
		results, raw := goClientCalls(t, h.env, through, calls)
		seen = append(seen, raw...)
		for i, c := range calls {
			checkFSResult(t, c, results[i])
		}
	})

	t.Run("the chain", func(t *testing.T) {
		entries, rep := readChain(t, h.aegisHome, "fs")
		t.Logf("chain: %d entries, %d checkpoints, %d segments", rep.Entries, rep.Checkpoints, rep.Segments)
		// Two sessions, each making every call once, in order.
		want := append(slices.Clone(calls), calls...)
		if len(entries) != len(want) {
			t.Fatalf("the chain has %d entries, want %d:\n%s", len(entries), len(want), describe(entries))
		}
		sessions := map[string]bool{}
		for i, e := range entries {
			c := want[i]
			sessions[e.Session] = true
			if e.Tool != c.tool || e.Decision != c.want || e.Server != "fs" || e.Principal != "e2e" {
				t.Errorf("entry %d is %s/%s %s by %q, want fs/%s %s by \"e2e\" (%s)", e.Seq, e.Server, e.Tool, e.Decision, e.Principal, c.tool, c.want, c.name)
			}
			if c.rule != "" && !slices.Contains(e.Rules, c.rule) {
				t.Errorf("entry %d (%s): rules %v do not name %q", e.Seq, c.name, e.Rules, c.rule)
			}
			var paths []string
			for _, cp := range e.Caps {
				paths = append(paths, cp.Path)
			}
			for _, p := range c.paths {
				if !slices.Contains(paths, p) {
					t.Errorf("entry %d (%s): derived paths %q do not hold %q", e.Seq, c.name, paths, p)
				}
			}
		}
		if len(sessions) != 2 {
			t.Errorf("the chain names %d sessions, want 2", len(sessions))
		}
	})

	t.Run("aegis verify and recheck", func(t *testing.T) {
		out, code := aegisCLI(t, h.env, "verify", "--server", "fs")
		if code != 0 || !strings.Contains(out, fmt.Sprintf("%d entries", 2*len(calls))) || !strings.Contains(out, "\nOK\n") {
			t.Errorf("aegis verify: exit status %d:\n%s", code, out)
		}
		// Replayed against the looser policy, exactly the refused reads
		// flip, in both sessions.
		out, code = aegisCLI(t, h.env, "recheck", "--config", config, "--server", "fs", "--policy", filepath.Join(e2eDir, "testdata", "filesystem", "looser.yaml"))
		var want, got []string
		for i, c := range append(slices.Clone(calls), calls...) {
			if c.flips {
				want = append(want, fmt.Sprintf("seq %d: fs/%s deny -> allow", i+1, c.tool))
			}
		}
		flip := regexp.MustCompile(`(?m)^seq (\d+): (\S+) by "e2e": (\w+) -> (\w+): `)
		for _, m := range flip.FindAllStringSubmatch(out, -1) {
			got = append(got, fmt.Sprintf("seq %s: %s %s -> %s", m[1], m[2], m[3], m[4]))
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("aegis recheck: the entries that flip (-want +got):\n%s\noutput:\n%s", diff, out)
		}
		if wantCode := 3; code != wantCode || !strings.Contains(out, fmt.Sprintf("%d entries, %d flip", 2*len(calls), len(want))) {
			t.Errorf("aegis recheck: exit status %d, want %d:\n%s", code, wantCode, out)
		}
	})

	t.Run("nothing was written", func(t *testing.T) {
		for _, p := range []string{".ssh/authorized_keys", ".ssh/notes.txt"} {
			if _, err := os.Lstat(filepath.Join(h.home, p)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("~/%s exists after a refused write (%v)", p, err)
			}
		}
		if _, err := os.Stat(filepath.Join(h.home, "projects/notes.txt")); err != nil {
			t.Errorf("the source of a refused move is gone: %v", err)
		}
	})

	t.Run("the key never came out", func(t *testing.T) {
		// The key as read_media_file would send it.
		forms := [][]byte{[]byte(h.secret), []byte(base64.StdEncoding.EncodeToString([]byte(h.key)))}
		holds := func(b []byte) bool {
			return slices.ContainsFunc(forms, func(f []byte) bool { return bytes.Contains(b, f) })
		}
		// Everything the clients saw, and everything aegis stored: the
		// chain, the server's stderr log, whatever else is in its state.
		filepath.WalkDir(h.aegisHome, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				b, err := os.ReadFile(p)
				if err != nil {
					t.Error(err)
				}
				seen = append(seen, b)
				if holds(b) {
					t.Errorf("%s holds the key", p)
				}
			}
			return nil
		})
		if len(seen) < 5 {
			t.Fatalf("only %d outputs to look at: the runs above failed", len(seen))
		}
		for i, b := range seen {
			if holds(b) {
				t.Errorf("output %d holds the key:\n%s", i, b)
			}
		}
		// The server's stderr is kept (issue 3), and the check above read it.
		log, err := os.ReadFile(filepath.Join(h.aegisHome, "logs", "fs.stderr.log"))
		if err != nil || !bytes.Contains(log, []byte("Secure MCP Filesystem Server running on stdio")) {
			t.Errorf("the server's stderr log does not hold its start line (%v):\n%s", err, log)
		}
	})
}

// aegisCLI runs an aegis command and returns its combined output and exit
// status.
func aegisCLI(t *testing.T, env []string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, aegisBin, args...)
	c.Env = env
	out, err := c.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	case err != nil:
		t.Fatalf("aegis %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), 0
}

// writePlan writes calls as a plan for driver.mjs's "calls" scenario and
// returns its file name.
func writePlan(t *testing.T, calls []fsCall) string {
	t.Helper()
	plan := make([]methodCall, len(calls))
	for i, c := range calls {
		plan[i] = methodCall{Name: c.name, Tool: c.tool, Arguments: c.args}
	}
	return writeMethodPlan(t, plan, false)
}

// tsResults returns the results of the calls of a "calls" transcript, in
// order, after its initialize and tools/list steps.
func tsResults(t *testing.T, r driverRun) []fsResult {
	t.Helper()
	var out []fsResult
	for i, raw := range r.T.Steps {
		var s struct {
			Step   string
			Result json.RawMessage
			Error  *struct{ Message string }
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		if i < 2 {
			if s.Error != nil {
				t.Fatalf("%s failed: %s", s.Step, s.Error.Message)
			}
			continue
		}
		var res fsResult
		switch {
		case s.Error != nil:
			res.err = s.Error.Message
		case s.Result != nil:
			var result struct {
				IsError bool
				Content []struct{ Type, Text string }
			}
			if err := json.Unmarshal(s.Result, &result); err != nil {
				t.Fatalf("%s: %v", s.Step, err)
			}
			res.isError = result.IsError
			for _, c := range result.Content {
				res.text += c.Text
			}
		}
		out = append(out, res)
	}
	return out
}

// goClientCalls makes the calls with the official Go SDK client, over
// stdio to cmd, and returns the results and everything it saw.
func goClientCalls(t *testing.T, env, cmd []string, calls []fsCall) ([]fsResult, [][]byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := exec.Command(cmd[0], cmd[1:]...)
	c.Env = env
	var stderr bytes.Buffer
	c.Stderr = &stderr
	// No roots: the filesystem server would make the client's roots its
	// allowed directories.
	client := mcp.NewClient(&mcp.Implementation{Name: "aegis-e2e-go", Version: "1.0.0"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	start := time.Now()
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: c, TerminateDuration: 2 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connecting through aegis: %v\nstderr:\n%s", err, stderr.String())
	}
	var seen [][]byte
	tools, err := session.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	for _, want := range []string{"read_file", "read_text_file", "read_multiple_files", "read_media_file"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list through aegis lacks %s: %v", want, names)
		}
	}
	var out []fsResult
	for _, call := range calls {
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: call.tool, Arguments: call.args})
		if err != nil {
			out = append(out, fsResult{err: err.Error()})
			seen = append(seen, []byte(err.Error()))
			continue
		}
		b, _ := json.Marshal(res)
		seen = append(seen, b)
		out = append(out, fsResult{isError: res.IsError, text: resultText(res)})
	}
	if err := session.Close(); err != nil {
		t.Errorf("closing the session: %v", err)
	}
	t.Logf("go client: %v", time.Since(start).Round(time.Millisecond))
	// Close waited for aegis to exit, so stderr is complete.
	if strings.Contains(stderr.String(), "DATA RACE") {
		t.Errorf("aegis reported a data race:\n%s", stderr.String())
	}
	seen = append(seen, stderr.Bytes())
	return out, seen
}
