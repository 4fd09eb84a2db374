package gateway

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aegis-mcp/aegis/internal/dlp"
	"github.com/google/go-cmp/cmp"
)

// sameJSON reports whether a and b are one JSON value, numbers compared
// by their text.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	decode := func(data []byte) any {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("decoding %q: %v", data, err)
		}
		return v
	}
	return cmp.Equal(decode(a), decode(b))
}

// checkRedactEnvelope holds redactEnvelope to redactAll on a: the
// same redactions; the same bytes when anything was found or the
// arguments could not be read; otherwise the input as it is, which is the
// same JSON value as the slow path's re-encoding.
func checkRedactEnvelope(t *testing.T, a []byte) {
	t.Helper()
	wantOut, wantReds := redactAll(a)
	gotOut, gotReds := redactEnvelope(a)
	if len(wantReds) == 0 {
		wantReds = nil
	}
	if len(gotReds) == 0 {
		gotReds = nil
	}
	if diff := cmp.Diff(wantReds, gotReds); diff != "" {
		t.Fatalf("redactions of %q (-slow +fast):\n%s", a, diff)
	}
	_, _, err := dlp.RedactJSON(a, nil, nil)
	switch {
	case err != nil || len(wantReds) > 0:
		if !bytes.Equal(gotOut, wantOut) {
			t.Fatalf("arguments %q: fast path gave %q, slow path %q", a, gotOut, wantOut)
		}
	default:
		if !bytes.Equal(gotOut, a) {
			t.Fatalf("arguments %q with nothing found: fast path gave %q, want them as they are", a, gotOut)
		}
		if !sameJSON(t, gotOut, wantOut) {
			t.Fatalf("arguments %q: fast path gave %q, not the JSON value of the slow path's %q", a, gotOut, wantOut)
		}
	}
}

func TestRedactEnvelopeFastPath(t *testing.T) {
	for _, tc := range []struct {
		name string
		args string
	}{
		{"typical", `{"path":"/home/u/projects/notes.md"}`},
		{"whitespace and escapes kept", "{ \"path\" : \"/tmp/\\u0061\\/b\" ,\n\"n\": 1.50 }"},
		{"empty object", `{}`},
		{"secret in a value", `{"body":"key AKIAZ7Q2MX4KTR5WLB3N here"}`},
		{"secret spelt with escapes", `{"body":"\u0041KIAZ7Q2MX4KTR5WLB3N"}`},
		{"secret in a member name", `{"AKIAZ7Q2MX4KTR5WLB3N":1}`},
		{"secret in a nested array", `{"a":[{"b":["x","ghp_0123456789abcdefghijklmnopqrstuvwxyz"]}]}`},
		{"card number as a number", `{"n":4111111111111111}`},
		{"private key", `{"k":"-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----"}`},
		{"not an object", `[1,2]`},
		{"not JSON", `{"a":`},
		{"invalid UTF-8", "{\"a\":\"\xff\"}"},
		{"duplicate member", `{"a":1,"a":2}`},
		{"empty", ``},
		{"deep", strings.Repeat(`{"a":`, 200) + "1" + strings.Repeat("}", 200)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkRedactEnvelope(t, []byte(tc.args))
		})
	}
}

// TestRedactEnvelopeFindsSecrets: the fast path does not let a secret
// through (a test that the reference itself finds these).
func TestRedactEnvelopeFindsSecrets(t *testing.T) {
	for _, a := range []string{
		`{"body":"key AKIAZ7Q2MX4KTR5WLB3N here"}`,
		`{"body":"\u0041KIAZ7Q2MX4KTR5WLB3N"}`,
		`{"AKIAZ7Q2MX4KTR5WLB3N":1}`,
	} {
		out, reds := redactEnvelope([]byte(a))
		if len(reds) == 0 || bytes.Contains(out, []byte("Z7Q2MX4KTR5WLB3N")) {
			t.Errorf("redactEnvelope(%s) = %s, %v: the secret is kept", a, out, reds)
		}
	}
}

func FuzzRedactEnvelope(f *testing.F) {
	for _, s := range []string{
		`{"path":"/home/u/projects/notes.md"}`, `{"body":"AKIAZ7Q2MX4KTR5WLB3N"}`, "{ \"a\" : \"\\u0041\" }",
		`{"n":4111111111111111}`, `{"a":[1,{"b":null}]}`, `[]`, `{`, "{\"\xff\":1}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, a []byte) {
		checkRedactEnvelope(t, a)
	})
}

// BenchmarkRedactEnvelope redacts the arguments of a typical call, in
// which DLP finds nothing.
func BenchmarkRedactEnvelope(b *testing.B) {
	a := []byte(`{"path":"/home/u/projects/notes.md"}`)
	b.ReportAllocs()
	for b.Loop() {
		out, _ := redactEnvelope(a)
		if len(out) == 0 {
			b.Fatal("no arguments")
		}
	}
}
