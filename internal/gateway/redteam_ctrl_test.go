package gateway

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAskShowsNoControlCharacters: what a person reads of a held call in
// a terminal (`aegis approvals list`, the notice on aegis run's stderr,
// the elicitation's message) comes from the model's arguments. A path
// with ESC sequences or newlines MUST NOT reach the question's caps or
// reason raw: "\x1b[1A\x1b[2K" erases the line that names the real path,
// and a newline forges the lines after it.
func TestAskShowsNoControlCharacters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "approvals.db")
	s, _, asked := approvalSession(t, path, 50*time.Millisecond)
	var notice bytes.Buffer
	s.notify = &notice
	args := `{"path":"/home/a/projects/shared/x\u001b[1A\u001b[2K\nfs.write /home/a/projects/shared/harmless.txt","content":"1"}`
	if _, err := s.Call(context.Background(), "write_file", []byte(args)); err != nil {
		t.Fatal(err)
	}
	r := <-asked
	shown := strings.Join(r.Caps, "\n") + "\n" + r.Reason + "\n" + notice.String()
	if i := strings.IndexFunc(shown, func(c rune) bool { return c == 0x1b || c == '\r' }); i >= 0 {
		t.Errorf("a control character reaches what the person reads: %q", shown)
	}
	for _, c := range r.Caps {
		if strings.Contains(c, "\n") {
			t.Errorf("a capability shown over two lines, the second the model's: %q", c)
		}
	}
}
