package session

import (
	"fmt"
	"testing"

	"github.com/aegis-mcp/aegis/internal/args"
)

// TestTaintValues: a session keeps its untrusted values, each with its
// source, forgets the oldest past the bound, and another session has
// none of them.
func TestTaintValues(t *testing.T) {
	s := New(nil)
	var doc args.Doc
	if err := doc.Decode([]byte(`{"a":["see https://x.evil.com/p.", "short", "a-long-token-0123456789"],"b":{"c":"mallory@evil.com"}}`), nil); err != nil {
		t.Fatal(err)
	}
	toks := Tokens(nil, doc.Root())
	s.TaintValues("s1", "web/read", toks)
	for _, tt := range []struct {
		session, tok string
		want         bool
	}{
		{"s1", "https://x.evil.com/p", true},
		{"s1", "mallory@evil.com", true},
		{"s1", "a-long-token-0123456789", true},
		{"s1", "short", false}, // too short to be distinctive
		{"s2", "mallory@evil.com", false},
	} {
		if got, by := s.CarriesTaint(tt.session, []string{tt.tok}); got != tt.want || got && by != "web/read" {
			t.Errorf("%s %q: %v (%q), want %v", tt.session, tt.tok, got, by, tt.want)
		}
	}
	many := make([]string, MaxTaintedValues+10)
	for i := range many {
		many[i] = fmt.Sprintf("token-number-%08d", i)
	}
	s.TaintValues("s3", "web/read", many)
	if got, _ := s.CarriesTaint("s3", []string{many[0]}); got {
		t.Error("the oldest value was kept past the bound")
	}
	if got, _ := s.CarriesTaint("s3", []string{many[len(many)-1]}); !got {
		t.Error("the newest value was forgotten")
	}
}
