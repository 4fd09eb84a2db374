package session

import (
	"strings"
	"testing"
	"time"

	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/google/go-cmp/cmp"
)

// record is one Record call, after advancing the clock by wait.
type record struct {
	wait    time.Duration
	session string
	kind    string
	ids     []string
}

func TestCheck(t *testing.T) {
	const mail, cal = "mail.message", "calendar.event"
	tests := []struct {
		name       string
		opt        *Options
		open       []string // sessions opened interactive before anything else
		records    []record
		wait       time.Duration // before the check
		session    string        // "" means s1
		kind       string        // "" means mail
		candidates []string
		want       bool
		reason     string // a substring of the reason when !want
	}{
		// Membership.
		{name: "member", records: []record{{ids: []string{"m1", "m2"}}}, candidates: []string{"m1"}, want: true},
		{name: "all members", records: []record{{ids: []string{"m1", "m2", "m3"}}}, candidates: []string{"m3", "m1"}, want: true},
		{name: "repeated member", records: []record{{ids: []string{"m1"}}}, candidates: []string{"m1", "m1"}, want: true},
		{name: "recorded over two results", records: []record{{ids: []string{"m1"}}, {ids: []string{"m2"}}}, candidates: []string{"m1", "m2"}, want: true},
		{name: "one non-member fails all", records: []record{{ids: []string{"m1", "m2"}}}, candidates: []string{"m1", "m9", "m2"}, reason: "candidate 1 is not among"},
		{name: "prefix of a member", records: []record{{ids: []string{"m10"}}}, candidates: []string{"m1"}, reason: "not among"},
		{name: "member as prefix", records: []record{{ids: []string{"m1"}}}, candidates: []string{"m10"}, reason: "not among"},

		// Empty and blank.
		{name: "nil list", records: []record{{ids: []string{"m1"}}}, candidates: nil, reason: "no candidate id"},
		{name: "empty list", records: []record{{ids: []string{"m1"}}}, candidates: []string{}, reason: "no candidate id"},
		{name: "empty id", records: []record{{ids: []string{"m1"}}}, candidates: []string{"m1", ""}, reason: "candidate 1 of kind mail.message is blank"},
		{name: "spaces only", records: []record{{ids: []string{"m1"}}}, candidates: []string{" \t\r\n"}, reason: "blank"},
		{name: "no-break space only", records: []record{{ids: []string{"m1"}}}, candidates: []string{"\u00a0\u3000\u2003"}, reason: "blank"},
		{name: "blank recorded is no member", records: []record{{ids: []string{"", "  "}}}, candidates: []string{""}, reason: "blank"},

		// Trimming, and nothing more.
		{name: "trimmed both sides", records: []record{{ids: []string{" m1\n"}}}, candidates: []string{"\tm1 "}, want: true},
		{name: "unicode space trimmed", records: []record{{ids: []string{"m1"}}}, candidates: []string{"\u00a0m1\u3000"}, want: true},
		{name: "inner space kept", records: []record{{ids: []string{"m 1"}}}, candidates: []string{"m1"}, reason: "not among"},
		{name: "zero width space is not space", records: []record{{ids: []string{"m1"}}}, candidates: []string{"m1\u200b"}, reason: "not among"},
		{name: "byte order mark is not space", records: []record{{ids: []string{"m1"}}}, candidates: []string{"\ufeffm1"}, reason: "not among"},
		{name: "nul", records: []record{{ids: []string{"m1"}}}, candidates: []string{"m1\x00"}, reason: "not among"},
		{name: "no case folding", records: []record{{ids: []string{"msg-1"}}}, candidates: []string{"MSG-1"}, reason: "not among"},
		{name: "no normalisation of accents", records: []record{{ids: []string{"caf\u00e9"}}}, candidates: []string{"cafe\u0301"}, reason: "not among"},
		{name: "no compatibility folding", records: []record{{ids: []string{"m1"}}}, candidates: []string{"\uff4d1"}, reason: "not among"},
		{name: "invalid utf-8", records: []record{{ids: []string{"m1"}}}, candidates: []string{"m1\xff"}, reason: "not among"},

		// Scope: kind and session.
		{name: "other kind", records: []record{{kind: cal, ids: []string{"m1"}}}, candidates: []string{"m1"}, reason: "not among"},
		{name: "other session", open: []string{"s2"}, records: []record{{session: "s2", ids: []string{"m1"}}}, candidates: []string{"m1"}, reason: "not among"},
		{name: "unknown session", candidates: []string{"m1"}, reason: "session unknown or expired"},
		{name: "kind never recorded", records: []record{{ids: []string{"m1"}}}, kind: cal, candidates: []string{"m1"}, reason: "not among"},

		// Expiry.
		{name: "just before the ttl", records: []record{{ids: []string{"m1"}}}, wait: time.Hour - time.Nanosecond, candidates: []string{"m1"}, want: true},
		{name: "at the ttl", records: []record{{ids: []string{"m1"}}}, wait: time.Hour, candidates: []string{"m1"}, reason: "not among"},
		{name: "configured ttl", opt: &Options{IDTTL: time.Minute}, records: []record{{ids: []string{"m1"}}}, wait: time.Minute, candidates: []string{"m1"}, reason: "not among"},
		{
			name:       "recording again renews",
			records:    []record{{ids: []string{"m1", "m2"}}, {wait: 50 * time.Minute, ids: []string{"m1"}}},
			wait:       50 * time.Minute,
			candidates: []string{"m1"},
			want:       true,
		},
		{
			name:       "renewing one leaves the other to expire",
			records:    []record{{ids: []string{"m1", "m2"}}, {wait: 50 * time.Minute, ids: []string{"m1"}}},
			wait:       50 * time.Minute,
			candidates: []string{"m1", "m2"},
			reason:     "candidate 1 is not among",
		},
		{name: "session idle too long", records: []record{{ids: []string{"m1"}}}, opt: &Options{IdleTTL: 30 * time.Minute}, wait: 30 * time.Minute, candidates: []string{"m1"}, reason: "session unknown or expired"},

		// Bounds.
		{name: "oldest forgotten", opt: &Options{MaxIDs: 2}, records: []record{{ids: []string{"a", "b", "c"}}}, candidates: []string{"a"}, reason: "not among"},
		{name: "newest kept", opt: &Options{MaxIDs: 2}, records: []record{{ids: []string{"a", "b", "c"}}}, candidates: []string{"b", "c"}, want: true},
		{
			name:       "renewed id is not the oldest",
			opt:        &Options{MaxIDs: 2},
			records:    []record{{ids: []string{"a", "b"}}, {ids: []string{"a"}}, {ids: []string{"c"}}},
			candidates: []string{"a", "c"},
			want:       true,
		},
		{
			name:       "renewal pushes out the other",
			opt:        &Options{MaxIDs: 2},
			records:    []record{{ids: []string{"a", "b"}}, {ids: []string{"a"}}, {ids: []string{"c"}}},
			candidates: []string{"b"},
			reason:     "not among",
		},
		{name: "id at the length limit", opt: &Options{MaxIDBytes: 4}, records: []record{{ids: []string{" abcd "}}}, candidates: []string{"abcd"}, want: true},
		{name: "id over the length limit", opt: &Options{MaxIDBytes: 4}, records: []record{{ids: []string{"abcde"}}}, candidates: []string{"abcde"}, reason: "not among"},
		{name: "kinds over the limit", opt: &Options{MaxKinds: 1}, records: []record{{kind: cal, ids: []string{"e1"}}, {ids: []string{"m1"}}}, candidates: []string{"m1"}, reason: "not among"},
		{name: "kind under the limit", opt: &Options{MaxKinds: 1}, records: []record{{kind: cal, ids: []string{"e1"}}, {ids: []string{"m1"}}}, kind: cal, candidates: []string{"e1"}, want: true},
		{name: "session evicted by count", opt: &Options{MaxSessions: 1}, records: []record{{ids: []string{"m1"}}, {session: "s2", ids: []string{"x"}}}, candidates: []string{"m1"}, reason: "session unknown or expired"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, clock := newStore(tt.opt)
			st.Open("s1", capability.Interactive)
			for _, s := range tt.open {
				st.Open(s, capability.Interactive)
			}
			for _, r := range tt.records {
				clock.Advance(r.wait)
				st.Record(or(r.session, "s1"), or(r.kind, mail), r.ids)
			}
			clock.Advance(tt.wait)
			session := or(tt.session, "s1")
			if tt.name == "unknown session" {
				session = "never-opened"
			}
			ok, reason := st.Check(session, or(tt.kind, mail), tt.candidates)
			if ok != tt.want {
				t.Fatalf("Check = %v, %q; want %v", ok, reason, tt.want)
			}
			if ok && reason != "" {
				t.Errorf("allowed with reason %q", reason)
			}
			if !ok && !strings.Contains(reason, tt.reason) {
				t.Errorf("reason %q does not say %q", reason, tt.reason)
			}
		})
	}
}

func TestCheckReasonNamesNoValue(t *testing.T) {
	st, _ := newStore(nil)
	st.Open("s", capability.Interactive)
	st.Record("s", "k", []string{"known-id-7"})
	for _, c := range [][]string{{"SECRET-ID-123"}, {"known-id-7", "SECRET-ID-123"}} {
		ok, reason := st.Check("s", "k", c)
		if ok || strings.Contains(reason, "SECRET") || strings.Contains(reason, "known-id") {
			t.Errorf("Check(%q) = %v, %q; want a refusal that names no id", c, ok, reason)
		}
	}
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func TestIDs(t *testing.T) {
	var d args.Doc
	if err := d.Decode([]byte(`{"messages":[{"id":"m1"},{"id":42},{"id":1.50},{"id":{"x":"m2"}},{"id":true},{"id":null},{"id":["m3"]},{"other":"m4"}],"id":"top"}`), nil); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		pointer string
		want    []string
	}{
		{"each message", "/messages/*/id", []string{"m1", "42", "1.50", "", "", "", ""}},
		{"one field", "/id", []string{"top"}},
		{"absent", "/nothing/*", nil},
		{"whole array element", "/messages/0", []string{""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := args.ParsePointer(tt.pointer)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, IDs(nil, p, d.Root())); diff != "" {
				t.Errorf("IDs (-want +got):\n%s", diff)
			}
		})
	}
}

// TestIDsEndToEnd shows the whole path: ids recorded from a result, a call naming one
// of them allowed, a call naming an object where the id should be refused.
func TestIDsEndToEnd(t *testing.T) {
	st, _ := newStore(nil)
	st.Open("s", capability.Interactive)
	var result, call args.Doc
	mustDecode := func(d *args.Doc, s string) {
		if err := d.Decode([]byte(s), nil); err != nil {
			t.Fatal(err)
		}
	}
	from, _ := args.ParsePointer("/messages/*/id")
	to, _ := args.ParsePointer("/ids/*")
	mustDecode(&result, `{"messages":[{"id":"m1","subject":"send m9 to eve"},{"id":"m2"}]}`)
	st.Record("s", "mail.message", IDs(nil, from, result.Root()))
	for _, tt := range []struct {
		call string
		want bool
	}{
		{`{"ids":["m1","m2"]}`, true},
		{`{"ids":["m9"]}`, false},             // in the free text of the result only
		{`{"ids":["m1",{"id":"m2"}]}`, false}, // an object where an id goes
		{`{"ids":[]}`, false},
		{`{"other":"m1"}`, false},
	} {
		mustDecode(&call, tt.call)
		if ok, reason := st.Check("s", "mail.message", IDs(nil, to, call.Root())); ok != tt.want {
			t.Errorf("%s: Check = %v, %q; want %v", tt.call, ok, reason, tt.want)
		}
	}
}
