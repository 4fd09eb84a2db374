package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// rawStep is one message of a raw session, written as is. wait names the
// id (as JSON text) whose response ends the step; until, if set, names a
// substring of the line that ends it instead; with neither, the next step
// follows at once.
type rawStep struct {
	send  string
	wait  string
	until string
}

// rawScript is a session written byte by byte: spellings an SDK client
// would never produce (escapes, exponents, spaces, a batch, a string id,
// unknown members, a response to nothing) that aegis must pass on as they
// are.
var rawScript = []rawStep{
	{send: `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"experimental":{"e2e":{"x":[1,2.50,-0,1e400]}}},"clientInfo":{"name":"raw","version":"0"},"e2eUnknown":{"a":null}}}`, wait: "0"},
	{send: `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
	{send: `{"jsonrpc":"2.0","id":"list-1","method":"tools/list","params":{"_meta":{"e2e":true}}}`, wait: `"list-1"`},
	{send: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"caf\u00e9 \ud83d\ude00 \"q\" \/ <&> \u2028"}}}`, wait: "1"},
	{send: `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get-sum","arguments":{"a":1e2,"b":-0.5}}}`, wait: "2"},
	{send: `{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"args-prompt","arguments":{"city":"Trondheim"}}}`, wait: "3"},
	{send: `{"jsonrpc":"2.0","id":4,"method":"resources/templates/list"}`, wait: "4"},
	{send: `{"jsonrpc":"2.0","id":5,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"completable-prompt"},"argument":{"name":"department","value":"M"}}}`, wait: "5"},
	{send: `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"trigger-long-running-operation","arguments":{"duration":0.3,"steps":3},"_meta":{"progressToken":"p-1"}}}`, wait: "6"},
	{send: `{"jsonrpc":"2.0","id":7,"method":"logging/setLevel","params":{"level":"debug"}}`, wait: "7"},
	{send: `{"jsonrpc":"2.0","id":8,"method":"resources/subscribe","params":{"uri":"demo://resource/dynamic/text/9"}}`, wait: "8"},
	{send: `{"jsonrpc":"2.0","id":9,"method":"e2e/unknown","params":{"x":1}}`, wait: "9"},
	{send: `  { "jsonrpc" : "2.0" , "id" : 10 , "method" : "ping" }  `, wait: "10"},
	// A batch of notifications. (server-everything's SDK answers no batch,
	// so a batch of requests would be left unanswered directly; aegis then
	// tells the client at exit that the server went without answering.)
	{send: `[{"jsonrpc":"2.0","method":"notifications/e2e"},{"jsonrpc":"2.0","method":"notifications/e2e-2","params":{}}]`},
	{send: `{"jsonrpc":"2.0","id":12,"method":"resources/read","params":{"uri":"demo://resource/static/document/features.md"}}`, wait: "12"},
	// A response to a request the server never sent.
	{send: `{"jsonrpc":"2.0","id":999,"result":{}}`},
	{send: `{"jsonrpc":"2.0","id":14,"method":"ping"}`, wait: "14"},
}

// rawCancel cancels a call the server is running: the server drops its
// answer, so the client must never see one, not even at the end.
var rawCancel = []rawStep{
	{send: `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`, wait: "0"},
	{send: `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
	{send: `{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"trigger-long-running-operation","arguments":{"duration":0.6,"steps":2},"_meta":{"progressToken":"p-13"}}}`, until: `"progress":1,"total":2,"progressToken":"p-13"`},
	{send: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":13,"reason":"raw e2e"}}`},
	{send: `{"jsonrpc":"2.0","id":14,"method":"ping"}`, wait: "14"},
}

// TestEverythingRawBytes runs scripts against server-everything directly
// and through `aegis run`, and requires every line the client receives,
// until the server exits, to be the same bytes.
func TestEverythingRawBytes(t *testing.T) {
	needNode(t)
	server := []string{nodeBin, filepath.Join(e2eDir, everythingJS), "stdio"}
	config := filepath.Join(e2eDir, "testdata", "everything", "aegis.yaml")
	for _, tt := range []struct {
		name   string
		script []rawStep
	}{
		{"session", rawScript},
		{"cancel", rawCancel},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env := baseEnv(tempDir(t), tempDir(t))
			var direct, through []string
			err := parallel(
				func() (err error) {
					direct, err = rawSession(env, server, tt.script)
					return err
				},
				func() (err error) {
					through, err = rawSession(env, aegisRun(config, "everything", server...), tt.script)
					return err
				},
			)
			if err != nil {
				t.Fatal(err)
			}
			if len(direct) < 3 {
				t.Fatalf("the server sent %d lines directly; the script should draw more", len(direct))
			}
			if diff := cmp.Diff(direct, through); diff != "" {
				t.Errorf("the bytes through aegis differ from the direct ones (-direct +through aegis):\n%s", diff)
			}
		})
	}
}

// rawSession runs script against cmd and returns the lines it wrote to
// stdout until it exited.
func rawSession(env []string, cmd []string, script []rawStep) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, cmd[0], cmd[1:]...)
	c.Env = env
	var stderr bytes.Buffer
	c.Stderr = &stderr
	c.WaitDelay = 5 * time.Second
	stdin, err := c.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := c.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := c.Start(); err != nil {
		return nil, err
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		br := bufio.NewReader(stdout)
		for {
			line, err := br.ReadString('\n')
			if line != "" {
				lines <- line
			}
			if err != nil {
				return
			}
		}
	}()
	var got []string
	fail := func(err error) ([]string, error) {
		stdin.Close()
		c.Wait()
		return got, fmt.Errorf("%s: %w\nreceived:\n%s\nstderr:\n%s", cmd[0], err, strings.Join(got, ""), stderr.String())
	}
	for _, step := range script {
		if _, err := io.WriteString(stdin, step.send+"\n"); err != nil {
			return fail(err)
		}
		for step.wait != "" || step.until != "" {
			select {
			case line, ok := <-lines:
				if !ok {
					return fail(fmt.Errorf("stdout ended waiting for %s%s", step.wait, step.until))
				}
				got = append(got, line)
				if answers(line, step.wait) || step.until != "" && strings.Contains(line, step.until) {
					step.wait, step.until = "", ""
				}
			case <-time.After(20 * time.Second):
				return fail(fmt.Errorf("waited in vain for %s%s", step.wait, step.until))
			}
		}
	}
	// Let the cancelled call run out, then end the session the way the
	// stdio transport says: close the server's input and read to the end.
	time.Sleep(500 * time.Millisecond)
	stdin.Close()
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				err := c.Wait()
				var ee *exec.ExitError
				if err != nil && !errors.As(err, &ee) {
					return fail(err)
				}
				if strings.Contains(stderr.String(), "DATA RACE") {
					return fail(errors.New("aegis reported a data race"))
				}
				return got, nil
			}
			got = append(got, line)
		case <-time.After(20 * time.Second):
			return fail(errors.New("stdout did not end after stdin was closed"))
		}
	}
}

// answers reports whether line is a response whose id is the JSON text id.
func answers(line, id string) bool {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if json.Unmarshal([]byte(line), &m) != nil {
		return false
	}
	return string(m.ID) == id && (m.Result != nil || m.Error != nil)
}
