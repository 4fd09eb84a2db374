package record

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aegis-mcp/aegis/internal/jcsref"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func digestOf(s string) Digest { return sha256.Sum256([]byte(s)) }

// sample is an entry with every field set, and strings that need escaping.
func sample() *Entry {
	return &Entry{
		V:              Version,
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
		Caps: []Cap{
			{Kind: "fs.read", Path: "/home/alice/a \"quoted\"\tname\u2028é"},
			{Kind: "net.connect", Scheme: "https", Host: "api.github.com", Port: 443, URL: "https://api.github.com/x?q=1"},
			{Kind: "exec", Program: "git", Argv: []string{"git", "log", "\x00\x1f\x7f"}},
			{Kind: "exec", Shell: true, Command: "ls | wc"},
			{Kind: "id", IDKind: "mail.message", ID: "m-17", Unproven: true},
			{Kind: "fs.write", Path: "/home/alice/tree", Subtree: true},
		},
		Decision:   Deny,
		Mode:       Shadow,
		Would:      Allow,
		Rules:      []string{"no-ssh", "r2"},
		Reason:     "path under ~/.ssh \\ denied",
		PolicyHash: digestOf("policy"),
		ArgsHash:   digestOf("args"),
		Envelope:   digestOf("envelope"),
		Prev:       digestOf("prev"),
	}
}

// minimal is an entry with every optional field empty.
func minimal() *Entry {
	return &Entry{V: Version, Seq: 1, Time: time.Unix(0, 0), Decision: Allow, Mode: Enforce}
}

func TestCanonicalGolden(t *testing.T) {
	tests := []struct {
		name string
		e    *Entry
		want string
	}{
		{
			name: "minimal",
			e:    minimal(),
			want: `{"args_hash":"","bound":false,"caps":[],"decision":"allow","envelope":"","mode":"enforce","origin":"","policy_hash":"",` +
				`"prev":"0000000000000000000000000000000000000000000000000000000000000000","principal":"","reason":"","roles":[],"rules":[],` +
				`"seq":1,"server":"","session":"","taint":false,"tier":"","time":"1970-01-01T00:00:00.000000000Z","tool":"","tool_schema_hash":"","v":1,"would":""}`,
		},
		{
			name: "a method other than tools/call",
			e:    func() *Entry { e := minimal(); e.Method = "resources/read"; e.Tool = "file:///x"; return e }(),
			want: `{"args_hash":"","bound":false,"caps":[],"decision":"allow","envelope":"","method":"resources/read","mode":"enforce","origin":"","policy_hash":"",` +
				`"prev":"0000000000000000000000000000000000000000000000000000000000000000","principal":"","reason":"","roles":[],"rules":[],` +
				`"seq":1,"server":"","session":"","taint":false,"tier":"","time":"1970-01-01T00:00:00.000000000Z","tool":"file:///x","tool_schema_hash":"","v":1,"would":""}`,
		},
		{
			name: "would equal to decision is dropped",
			e:    func() *Entry { e := minimal(); e.Would = Allow; return e }(),
			want: `{"args_hash":"","bound":false,"caps":[],"decision":"allow","envelope":"","mode":"enforce","origin":"","policy_hash":"",` +
				`"prev":"0000000000000000000000000000000000000000000000000000000000000000","principal":"","reason":"","roles":[],"rules":[],` +
				`"seq":1,"server":"","session":"","taint":false,"tier":"","time":"1970-01-01T00:00:00.000000000Z","tool":"","tool_schema_hash":"","v":1,"would":""}`,
		},
		{
			name: "a subtree capability",
			e: func() *Entry {
				e := minimal()
				e.Caps = []Cap{{Kind: "fs.write", Path: "/home/a", Subtree: true}, {Kind: "fs.read", Path: "/home/a"}}
				return e
			}(),
			want: `{"args_hash":"","bound":false,"caps":[{"kind":"fs.write","path":"/home/a","subtree":true},{"kind":"fs.read","path":"/home/a"}],"decision":"allow","envelope":"","mode":"enforce","origin":"","policy_hash":"",` +
				`"prev":"0000000000000000000000000000000000000000000000000000000000000000","principal":"","reason":"","roles":[],"rules":[],` +
				`"seq":1,"server":"","session":"","taint":false,"tier":"","time":"1970-01-01T00:00:00.000000000Z","tool":"","tool_schema_hash":"","v":1,"would":""}`,
		},
		{
			// The two optional keys, one of the entry and one of a
			// capability, together: a prompt's argument bound as a
			// whole subtree.
			name: "a method and a subtree capability",
			e: func() *Entry {
				e := minimal()
				e.Method, e.Tool = "prompts/get", "summarize"
				e.Caps = []Cap{{Kind: "fs.read", Path: "/home/a", Subtree: true}}
				return e
			}(),
			want: `{"args_hash":"","bound":false,"caps":[{"kind":"fs.read","path":"/home/a","subtree":true}],"decision":"allow","envelope":"","method":"prompts/get","mode":"enforce","origin":"","policy_hash":"",` +
				`"prev":"0000000000000000000000000000000000000000000000000000000000000000","principal":"","reason":"","roles":[],"rules":[],` +
				`"seq":1,"server":"","session":"","taint":false,"tier":"","time":"1970-01-01T00:00:00.000000000Z","tool":"summarize","tool_schema_hash":"","v":1,"would":""}`,
		},
		{
			name: "capabilities and escapes",
			e: &Entry{Seq: 2, Time: time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("x", 3600)), Decision: Ask, Mode: Enforce,
				Caps: []Cap{{Kind: "exec", Program: "sh", Argv: []string{"a\"\\\b\f\n\r\t\x01\x7f/"}, Shell: true, Command: "x"}, {Kind: "net.connect", Host: "h", Port: 1}}},
			want: `{"args_hash":"","bound":false,"caps":[{"argv":["a\"\\\b\f\n\r\t\u0001` + "\x7f" + `/"],"command":"x","kind":"exec","program":"sh","shell":true},{"host":"h","kind":"net.connect","port":1}],` +
				`"decision":"ask","envelope":"","mode":"enforce","origin":"","policy_hash":"",` +
				`"prev":"0000000000000000000000000000000000000000000000000000000000000000","principal":"","reason":"","roles":[],"rules":[],` +
				`"seq":2,"server":"","session":"","taint":false,"tier":"","time":"2026-01-02T02:04:05.000000006Z","tool":"","tool_schema_hash":"","v":1,"would":""}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.e.Canonical()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("Canonical (-want +got):\n%s", diff)
			}
			ref, err := jcsref.Canonical(got)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(ref, got) {
				t.Errorf("not JCS:\n got %s\nref %s", got, ref)
			}
		})
	}
}

// TestHashDefinition pins the hash to its definition in SPEC.md, computed
// here from the reference JCS of the stored line without "hash".
func TestHashDefinition(t *testing.T) {
	e := sample()
	line, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "hash")
	raw, _ := json.Marshal(m)
	canon, err := jcsref.Canonical(raw)
	if err != nil {
		t.Fatal(err)
	}
	want := Digest(sha256.Sum256(append([]byte("aegis.chain.v1\x00"), canon...)))
	got, err := e.ComputeHash()
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("ComputeHash = %v, want SHA-256(domain || JCS) = %v", got, want)
	}
}

func TestRoundTrip(t *testing.T) {
	withMethod := sample()
	withMethod.Method = "sampling/createMessage"
	for _, e := range []*Entry{sample(), minimal(), withMethod} {
		h, err := e.ComputeHash()
		if err != nil {
			t.Fatal(err)
		}
		e.Hash = h
		line, err := e.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var got Entry
		f, err := Decode(line, &got)
		if err != nil {
			t.Fatalf("Decode(%s): %v", line, err)
		}
		// Validating only (as verify does) accepts what building does.
		if _, err := Decode(line, nil); err != nil {
			t.Fatalf("Decode(%s, nil): %v", line, err)
		}
		if diff := cmp.Diff(e, &got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("decoded entry (-want +got):\n%s", diff)
		}
		if f.Seq != e.Seq || f.Prev != e.Prev || f.Hash != h || NewHasher().canonical(append(f.Body[:len(f.Body):len(f.Body)], '}')) != h {
			t.Errorf("facts = %+v", f)
		}
		// encoding/json reads the stored line into the same entry.
		var std Entry
		if err := json.Unmarshal(line, &std); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(e, &std, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("encoding/json entry (-want +got):\n%s", diff)
		}
	}
}

func TestCheckRejects(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Entry)
		want string
	}{
		{"unknown decision", func(e *Entry) { e.Decision = "maybe" }, "decision"},
		{"empty decision", func(e *Entry) { e.Decision = "" }, "decision"},
		{"decision in capitals", func(e *Entry) { e.Decision = "ALLOW" }, "decision"},
		{"unknown mode", func(e *Entry) { e.Mode = "off" }, "mode"},
		{"unknown would", func(e *Entry) { e.Would = "permit" }, "would"},
		{"principal not UTF-8", func(e *Entry) { e.Principal = "a\xffb" }, "principal"},
		{"role not UTF-8", func(e *Entry) { e.Roles = []string{"\xc0\x80"} }, "roles"},
		{"surrogate half", func(e *Entry) { e.Reason = "\xed\xa0\x80" }, "reason"},
		{"path not UTF-8", func(e *Entry) { e.Caps = []Cap{{Kind: "fs.read", Path: "/tmp/\xff"}} }, "caps[0]"},
		{"argv not UTF-8", func(e *Entry) { e.Caps = []Cap{{Kind: "exec", Argv: []string{"\xff"}}} }, "argv"},
		{"capability without kind", func(e *Entry) { e.Caps = []Cap{{Path: "/x"}} }, "empty kind"},
		{"year 10000", func(e *Entry) { e.Time = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }, "year"},
		{"year -1", func(e *Entry) { e.Time = time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC) }, "year"},
		{"seq above 2^53-1", func(e *Entry) { e.Seq = MaxSeq + 1 }, "seq"},
		{"tools/call written out", func(e *Entry) { e.Method = MethodToolsCall }, "method"},
		{"method not UTF-8", func(e *Entry) { e.Method = "a\xffb" }, "method"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := sample()
			tt.edit(e)
			_, err := e.Canonical()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Canonical error = %v, want one naming %q", err, tt.want)
			}
		})
	}
}

// TestDecodeRejects feeds the strict decoder lines that are valid JSON for
// the same entry, or nearly, but not the stored form: every one of them
// must be refused, or two parsers could read one line two ways.
func TestDecodeRejects(t *testing.T) {
	e := sample()
	e.Hash, _ = e.ComputeHash()
	good, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Decode(good, nil); err != nil {
		t.Fatalf("good line rejected: %v", err)
	}
	min := minimal()
	minLine, _ := min.MarshalJSON()
	rep := func(b []byte, old, new string) []byte {
		if !bytes.Contains(b, []byte(old)) {
			t.Fatalf("test bug: %q not in line", old)
		}
		return bytes.Replace(b, []byte(old), []byte(new), 1)
	}
	tests := []struct {
		name string
		line []byte
	}{
		{"empty", nil},
		{"not json", []byte("hello")},
		{"leading space", append([]byte(" "), good...)},
		{"trailing space", append(append([]byte{}, good...), ' ')},
		{"trailing CR", append(append([]byte{}, good...), '\r')},
		{"space after colon", rep(good, `"decision":"deny"`, `"decision": "deny"`)},
		{"keys out of order", rep(good, `"decision":"deny","envelope"`, `"envelope"`)},
		{"upper-case hex", rep(good, `"args_hash":"`+e.ArgsHash.String(), `"args_hash":"`+strings.ToUpper(e.ArgsHash.String()))},
		{"short digest", rep(good, e.ArgsHash.String(), e.ArgsHash.String()[:62])},
		{"zero digest spelled out", rep(minLine, `"args_hash":""`, `"args_hash":"`+strings.Repeat("0", 64)+`"`)},
		{"seq with leading zero", rep(good, `"seq":7`, `"seq":07`)},
		{"seq as float", rep(good, `"seq":7`, `"seq":7.0`)},
		{"seq as exponent", rep(good, `"seq":7`, `"seq":7e0`)},
		{"seq negative", rep(good, `"seq":7`, `"seq":-7`)},
		{"seq zero", rep(good, `"seq":7`, `"seq":0`)},
		{"seq 2^53", rep(good, `"seq":7`, `"seq":9007199254740992`)},
		{"seq overflowing uint64", rep(good, `"seq":7`, `"seq":184467440737095516160`)},
		{"seq as string", rep(good, `"seq":7`, `"seq":"7"`)},
		{"version 2", rep(good, `"v":1`, `"v":2`)},
		{"bound as string", rep(good, `"bound":true`, `"bound":"true"`)},
		{"bound as number", rep(good, `"bound":true`, `"bound":1`)},
		{"taint null", rep(good, `"taint":true`, `"taint":null`)},
		{"taint capitalised", rep(good, `"taint":true`, `"taint":True`)},
		{"tier missing", rep(good, `"tier":"data-read",`, ``)},
		{"unicode escape of a letter", rep(good, `"principal":"alice"`, `"principal":"\u0061lice"`)},
		{"escaped solidus", rep(good, `https://`, `https:\/\/`)},
		{"upper-case unicode escape", rep(good, `\u0000`, `\u001F`)},
		{"unicode escape for tab", rep(good, `\t`, `\u0009`)},
		{"unicode escape for quote", rep(good, `\"quoted`, `\u0022quoted`)},
		{"raw control character", rep(good, `\t`, "\t")},
		{"raw newline", rep(good, `\t`, "\n")},
		{"invalid UTF-8", rep(good, `alice`, "al\xffce")},
		{"overlong UTF-8", rep(good, `alice`, "al\xc1\xa9ce")},
		{"UTF-8 surrogate", rep(good, `alice`, "al\xed\xa0\x80ce")},
		{"escaped surrogate pair", rep(good, `é`, `\ud83d\ude00`)},
		{"unterminated escape", rep(good, `"alice"`, `"alice\`)},
		{"unknown decision", rep(good, `"decision":"deny"`, `"decision":"maybe"`)},
		{"decision with prefix match", rep(good, `"decision":"deny"`, `"decision":"denyx"`)},
		{"would equal to decision", rep(good, `"would":"allow"`, `"would":"deny"`)},
		{"duplicate key", rep(good, `"principal":"alice"`, `"principal":"alice","principal":"mallory"`)},
		{"unknown key", rep(good, `"reason":`, `"raison":"x","reason":`)},
		{"missing key", rep(good, `"origin":"interactive",`, ``)},
		{"empty method", rep(good, `"mode":`, `"method":"","mode":`)},
		{"tools/call written out", rep(good, `"mode":`, `"method":"tools/call","mode":`)},
		{"method out of order", rep(good, `"envelope":`, `"method":"prompts/get","envelope":`)},
		{"method as number", rep(good, `"mode":`, `"method":1,"mode":`)},
		{"method twice", rep(good, `"mode":`, `"method":"a","method":"b","mode":`)},
		{"null roles", rep(minLine, `"roles":[]`, `"roles":null`)},
		{"trailing comma in array", rep(good, `"r2"]`, `"r2",]`)},
		{"capability keys out of order", rep(good, `"kind":"fs.read","path"`, `"path":"x","kind":"fs.read","zzz"`)},
		{"capability duplicate key", rep(good, `"kind":"fs.read",`, `"kind":"fs.read","kind":"fs.read",`)},
		{"capability unknown key", rep(good, `"kind":"fs.read"`, `"kind":"fs.read","mode":"x"`)},
		{"capability empty field", rep(good, `"kind":"fs.read"`, `"host":"","kind":"fs.read"`)},
		{"capability without kind", rep(good, `,"kind":"id","unproven":true}`, `,"unproven":true}`)},
		{"capability empty object", rep(good, `{"argv":["git"`, `{},{"argv":["git"`)},
		{"capability port zero", rep(good, `"port":443`, `"port":0`)},
		{"capability port 65536", rep(good, `"port":443`, `"port":65536`)},
		{"capability shell false", rep(good, `"shell":true`, `"shell":false`)},
		{"capability subtree false", rep(good, `"subtree":true`, `"subtree":false`)},
		{"capability subtree as a string", rep(good, `"subtree":true`, `"subtree":"true"`)},
		{"capability subtree before path", rep(good, `"path":"/home/alice/tree","subtree":true`, `"subtree":true,"path":"/home/alice/tree"`)},
		{"capability subtree twice", rep(good, `"subtree":true`, `"subtree":true,"subtree":true`)},
		{"capability unproven false", rep(good, `"unproven":true`, `"unproven":false`)},
		{"capability unproven as a string", rep(good, `"unproven":true`, `"unproven":"true"`)},
		{"capability unproven before kind", rep(good, `"kind":"id","unproven":true`, `"unproven":true,"kind":"id"`)},
		{"capability unproven twice", rep(good, `"unproven":true`, `"unproven":true,"unproven":true`)},
		{"capability empty argv", rep(good, `{"argv":["git","log","\u0000\u001f`+"\x7f"+`"],`, `{"argv":[],`)},
		{"capability trailing comma", rep(good, `"ls | wc",`, `"ls | wc",,`)},
		{"time without nanoseconds", rep(good, `"time":"2026-11-29T12:00:01.000002345Z"`, `"time":"2026-11-29T12:00:01Z"`)},
		{"time with offset", rep(good, `"time":"2026-11-29T12:00:01.000002345Z"`, `"time":"2026-11-29T12:00:01.000002345+00:00"`)},
		{"time lower-case z", rep(good, `"time":"2026-11-29T12:00:01.000002345Z"`, `"time":"2026-11-29T12:00:01.000002345z"`)},
		{"time February 30", rep(good, `"time":"2026-11-29`, `"time":"2026-02-30`)},
		{"time hour 24", rep(good, `T12:00:01`, `T24:00:01`)},
		{"time leap second", rep(good, `T12:00:01`, `T12:00:60`)},
		{"time month 13", rep(good, `"time":"2026-11`, `"time":"2026-13`)},
		{"time with sign", rep(good, `"time":"2026-11`, `"time":"+026-11`)},
		{"hash missing", good[:len(good)-hashSuffixLen]},
		{"hash not last", rep(good, `"args_hash"`, `"hash":"`+e.Hash.String()+`","args_hash"`)},
		{"bytes after the entry", append(append([]byte{}, good...), "{}"...)},
		{"truncated", good[:len(good)/2]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Decode(tt.line, nil); err == nil {
				t.Errorf("decodeEntry accepted %s", tt.line)
			}
			var x Entry
			if _, err := Decode(tt.line, &x); err == nil {
				t.Errorf("decodeEntry (building) accepted %s", tt.line)
			}
		})
	}
}

// TestEncoderRefusesWhatCheckRefuses holds the encoder's own checks, made
// as it writes, to check: strings that are not UTF-8 at every place the
// word-at-a-time scan can meet them, and the fields check refuses.
func TestEncoderRefusesWhatCheckRefuses(t *testing.T) {
	strs := []struct {
		name string
		s    string
	}{
		{"empty", ""},
		{"plain", "alice@example.com"},
		{"U+FFFD itself", "\xef\xbf\xbd"},
		{"U+FFFD after 8 plain bytes", "abcdefgh\xef\xbf\xbd"},
		{"U+10FFFF", "\xf4\x8f\xbf\xbf"},
		{"escapes and controls", "\"\\\x00\x1f\x7f\u2028"},
		{"lone continuation", "\x80"},
		{"0xff at 7", "abcdefg\xff"},
		{"0xff at 8", "abcdefgh\xff"},
		{"0xff at 15 after an escape", "\"bcdefghijklmn\xff"},
		{"cut 2-byte sequence at the end", "abcdefgh\xc3"},
		{"cut 3-byte sequence", "abc\xe2\x82xyz"},
		{"overlong NUL", "\xc0\x80"},
		{"overlong slash", "\xe0\x80\xaf"},
		{"surrogate half", "\xed\xa0\x80"},
		{"above U+10FFFF", "\xf4\x90\x80\x80"},
		{"0xfe", "\xfe"},
	}
	places := []struct {
		name string
		put  func(*Entry, string)
	}{
		{"session", func(e *Entry, s string) { e.Session = s }},
		{"principal", func(e *Entry, s string) { e.Principal = s }},
		{"origin", func(e *Entry, s string) { e.Origin = s }},
		{"server", func(e *Entry, s string) { e.Server = s }},
		{"tool", func(e *Entry, s string) { e.Tool = s }},
		{"tier", func(e *Entry, s string) { e.Tier = s }},
		{"reason", func(e *Entry, s string) { e.Reason = s }},
		{"roles", func(e *Entry, s string) { e.Roles = []string{"dev", s} }},
		{"rules", func(e *Entry, s string) { e.Rules = []string{s} }},
		{"cap kind", func(e *Entry, s string) { e.Caps = []Cap{{Kind: "x" + s}} }},
		{"cap path", func(e *Entry, s string) { e.Caps = []Cap{{Kind: "fs.read", Path: s}} }},
		{"cap host", func(e *Entry, s string) { e.Caps = []Cap{{Kind: "net.connect", Scheme: s, Host: s, URL: s}} }},
		{"cap argv", func(e *Entry, s string) { e.Caps = []Cap{{Kind: "exec", Program: "sh", Argv: []string{"sh", s}}} }},
		{"cap command", func(e *Entry, s string) { e.Caps = []Cap{{Kind: "exec", Command: s}} }},
		{"cap id", func(e *Entry, s string) { e.Caps = []Cap{{Kind: "id", IDKind: s, ID: s}} }},
	}
	for _, st := range strs {
		for _, pl := range places {
			t.Run(st.name+"/"+pl.name, func(t *testing.T) {
				e := sample()
				pl.put(e, st.s)
				agree(t, e)
			})
		}
	}
	edits := []struct {
		name string
		edit func(*Entry)
	}{
		{"decision maybe", func(e *Entry) { e.Decision = "maybe" }},
		{"decision empty", func(e *Entry) { e.Decision = "" }},
		{"mode off", func(e *Entry) { e.Mode = "off" }},
		{"would permit", func(e *Entry) { e.Would = "permit" }},
		{"would deny", func(e *Entry) { e.Would = Deny }},
		{"capability without kind", func(e *Entry) { e.Caps = []Cap{{Path: "/x"}} }},
		{"second capability without kind", func(e *Entry) { e.Caps = []Cap{{Kind: "fs.read"}, {}} }},
		{"year 10000", func(e *Entry) { e.Time = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }},
		{"year -1", func(e *Entry) { e.Time = time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC) }},
		{"year 9999 in UTC, 10000 east of it", func(e *Entry) {
			e.Time = time.Date(10000, 1, 1, 0, 30, 0, 0, time.FixedZone("+01", 3600))
		}},
		{"year 0", func(e *Entry) { e.Time = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC) }},
	}
	for _, tt := range edits {
		t.Run(tt.name, func(t *testing.T) {
			e := sample()
			tt.edit(e)
			agree(t, e)
		})
	}
}

// agree fails t unless encodeEntry and check accept or refuse e together,
// with the same error, and an accepted e encodes as appendCanonical does.
func agree(t *testing.T, e *Entry) {
	t.Helper()
	want := e.check()
	got, err := encodeEntry([]byte("keep"), e, nil)
	if (err == nil) != (want == nil) || err != nil && err.Error() != want.Error() {
		t.Fatalf("encodeEntry error %v, check %v", err, want)
	}
	if err != nil {
		if string(got) != "keep" {
			t.Fatalf("encodeEntry refused but changed dst to %q", got)
		}
		return
	}
	if ref := appendCanonical([]byte("keep"), e, nil); !bytes.Equal(got, ref) {
		t.Fatalf("encodeEntry wrote\n%s\nappendCanonical\n%s", got, ref)
	}
}

// TestAppendTime holds appendTime to time.Format at the edges of its
// calendar arithmetic: eras, centuries, leap days, the first and last
// instants it can write and the ones just outside.
func TestAppendTime(t *testing.T) {
	tests := []struct {
		name string
		t    time.Time
	}{
		{"Unix epoch", time.Unix(0, 0)},
		{"just before the epoch", time.Unix(-1, 999_999_999)},
		{"first instant", time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"last instant", time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC)},
		{"just before year 0", time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC).Add(-1)},
		{"just after year 9999", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"year 0 is a leap year", time.Date(0, 2, 29, 12, 0, 0, 0, time.UTC)},
		{"day after 0000-02-29", time.Date(0, 3, 1, 0, 0, 0, 0, time.UTC)},
		{"2000-02-29", time.Date(2000, 2, 29, 23, 59, 59, 1, time.UTC)},
		{"1900-02-28 then March", time.Date(1900, 3, 1, 0, 0, 0, 0, time.UTC)},
		{"2100-03-01", time.Date(2100, 3, 1, 0, 0, 0, 0, time.UTC)},
		{"2400-02-29", time.Date(2400, 2, 29, 0, 0, 0, 0, time.UTC)},
		{"end of 1999", time.Date(1999, 12, 31, 23, 59, 59, 999_999_999, time.UTC)},
		{"zone east of UTC, previous day in UTC", time.Date(2026, 1, 1, 0, 30, 0, 5, time.FixedZone("+01", 3600))},
		{"9999 east of UTC is 9998 in UTC", time.Date(10000, 1, 1, 0, 30, 0, 0, time.FixedZone("+01", 3600))},
		{"far past", time.Unix(-1<<62, 0)},
		{"far future", time.Unix(1<<62, 0)},
		{"zero Time (year 1)", time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkAppendTime(t, tt.t)
		})
	}
}

// checkAppendTime fails t unless appendTime writes tm as time.Format does,
// or refuses it exactly when its UTC year is outside 0000-9999.
func checkAppendTime(t *testing.T, tm time.Time) {
	t.Helper()
	u := tm.UTC()
	valid := u.Year() >= 0 && u.Year() <= 9999
	got, ok := appendTime([]byte("x"), tm)
	if ok != valid {
		t.Fatalf("appendTime(%v) ok = %v, want %v", u, ok, valid)
	}
	if !ok {
		if string(got) != "x" {
			t.Fatalf("appendTime(%v) refused but appended %q", u, got)
		}
		return
	}
	if want := "x" + u.Format(timeLayout); string(got) != want {
		t.Fatalf("appendTime(%v) = %s, want %s", u, got, want)
	}
}
