package chain

import (
	"crypto/sha256"
	"testing"
	"time"

	"github.com/aegis-mcp/aegis/internal/record"
)

// Entries for chain's tests.

func digestOf(s string) record.Digest { return sha256.Sum256([]byte(s)) }

// sample is an entry with every field set, and strings that need escaping:
// record's sample, for chains that hold such entries.
func sample() *record.Entry {
	return &record.Entry{
		V:              record.Version,
		Seq:            7,
		Time:           time.Date(2026, 11, 29, 12, 0, 1, 2345, time.UTC),
		Session:        "s-1",
		Principal:      "alice",
		Roles:          []string{"dev", "ops"},
		Origin:         "interactive",
		Taint:          true,
		Server:         "fs",
		Tool:           "read_file",
		ToolSchemaHash: digestOf("schema"),
		Bound:          true,
		Tier:           "data-read",
		Caps: []record.Cap{
			{Kind: "fs.read", Path: "/home/alice/a \"quoted\"\tname\u2028é"},
			{Kind: "net.connect", Scheme: "https", Host: "api.github.com", Port: 443, URL: "https://api.github.com/x?q=1"},
			{Kind: "exec", Program: "git", Argv: []string{"git", "log", "\x00\x1f\x7f"}},
			{Kind: "exec", Shell: true, Command: "ls | wc"},
			{Kind: "id", IDKind: "mail.message", ID: "m-17"},
		},
		Decision:   record.Deny,
		Mode:       record.Shadow,
		Would:      record.Allow,
		Rules:      []string{"no-ssh", "r2"},
		Reason:     "path under ~/.ssh \\ denied",
		PolicyHash: digestOf("policy"),
		ArgsHash:   digestOf("args"),
		Envelope:   digestOf("envelope"),
		Prev:       digestOf("prev"),
	}
}

func mustCanon(t *testing.T, e *record.Entry) []byte {
	c, err := e.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// newRequest returns the request a Log's Append makes of e.
func newRequest(tb testing.TB, e *record.Entry) *request {
	tb.Helper()
	r := new(request)
	if err := r.t.Encode(e); err != nil {
		tb.Fatal(err)
	}
	return r
}

// hashSuffixLen is the length of the `,"hash":"<64 hex>"}` that ends a
// stored entry line (before its newline), as SPEC.md spells it.
const hashSuffixLen = len(`,"hash":""}`) + 64
