package dlp

// This file finds secrets by the name they are given: "key=value" and "key: value"
// entries of connection strings, env files, YAML, JSON, INI and HTTP headers.

// keyClass is what a key's name says about its value.
type keyClass uint8

const (
	kNone          keyClass = iota
	kPassword               // password, passwd, pwd
	kSecret                 // other names of secrets: db_password, client_secret, api_key, ...
	kAccountKey             // AccountKey, SharedAccessKey (Azure)
	kSig                    // sig (Azure SAS)
	kAuthorization          // Authorization, Proxy-Authorization
	kAWSSecret              // aws_secret_access_key, SecretAccessKey, ...
)

// classify reads a key name with ASCII case folded and '_', '-' and '.' dropped. It
// allocates nothing: byte slices are compared as strings in place.
func classify(key string) keyClass {
	var buf [64]byte
	n := 0
	for k := 0; k < len(key) && n < len(buf); k++ {
		if c := key[k]; c != '_' && c != '-' && c != '.' {
			buf[n] = lower(c)
			n++
		}
	}
	b := buf[:n]
	if n < 3 {
		return kNone
	}
	if !endsClassified[b[n-1]] {
		return kNone
	}
	switch string(b) {
	case "password", "passwd", "pwd":
		return kPassword
	case "accountkey", "sharedaccesskey":
		return kAccountKey
	case "sig":
		return kSig
	case "authorization", "proxyauthorization":
		return kAuthorization
	case "oldpwd":
		return kNone
	}
	if bytesContain(b, "secretaccesskey") || bytesSuffix(b, "awssecretkey") {
		return kAWSSecret
	}
	for _, suf := range secretSuffixes {
		if bytesSuffix(b, suf) {
			return kSecret
		}
	}
	if bytesSuffix(b, "token") {
		for _, not := range notSecretTokens {
			if bytesSuffix(b, not) {
				return kNone
			}
		}
		return kSecret
	}
	return kNone
}

// endsClassified holds the last letters of the names classify knows, in both cases.
var endsClassified = func() (t [256]bool) {
	for _, c := range "dygntesDYGNTES" {
		t[c] = true
	}
	return t
}()

func bytesSuffix(b []byte, p string) bool {
	return len(b) >= len(p) && string(b[len(b)-len(p):]) == p
}

func bytesContain(b []byte, p string) bool {
	for k := 0; k+len(p) <= len(b); k++ {
		if string(b[k:k+len(p)]) == p {
			return true
		}
	}
	return false
}

var secretSuffixes = []string{
	"password", "passwd", "passphrase", "dbpwd", "secret", "secretkey", "apikey",
	"privatekey", "accesskeysecret", "clientsecret", "authkey", "credentials",
}

// notSecretTokens are names ending in "token" that name no secret: pagination cursors,
// MCP's progressToken, cancellation tokens and a tokenizer's special tokens.
var notSecretTokens = []string{
	"pagetoken", "nexttoken", "continuationtoken", "synctoken", "cursortoken", "resumetoken",
	"cancellationtoken", "progresstoken", "resumptiontoken", "starttoken", "endtoken", "eostoken", "bostoken",
	"padtoken", "unktoken", "septoken", "clstoken", "masktoken", "maxtoken", "counttoken",
}

func contains(s, p string) bool {
	for k := 0; k+len(p) <= len(s); k++ {
		if s[k:k+len(p)] == p {
			return true
		}
	}
	return false
}

// entry is a "key=value" or "key: value" around the separator at sep.
type entry struct {
	sep        int  // index of '=' or ':'
	k0, k1     int  // the key, s[k0:k1]
	q0         int  // the key's first byte, opening quote included
	quote      byte // the quote around the key, or 0
	escaped    bool // the key's quotes are backslash-escaped (JSON inside a JSON string)
	spaced     bool // space between key and separator
	class      keyClass
	va, vb     int  // the value, s[va:vb]
	vquote     byte // the value's quote, or 0 for a bare value
	afterValue int  // the first byte after the value and its closing quote
}

// atAssign handles a '=' or a ':' (not of "://") at i.
func (sc *scanner) atAssign(i int) {
	s := sc.s
	e := entry{sep: i}
	k1 := i
	for k1 > 0 && i-k1 < 4 && (s[k1-1] == ' ' || s[k1-1] == '\t') {
		k1--
	}
	e.spaced = k1 < i
	if k1 > 0 && (s[k1-1] == '"' || s[k1-1] == '\'') {
		e.quote = s[k1-1]
		k1--
		if k1 > 0 && s[k1-1] == '\\' {
			e.escaped = true
			k1--
		}
	}
	// Every key classify knows ends in one of these letters; most keys end in another.
	if k1 == 0 || !endsClassified[s[k1-1]] {
		return
	}
	k0 := k1
	for k0 > 0 && k1-k0 <= 64 && is(s[k0-1], cKey) {
		k0--
	}
	if k0 == k1 || k1-k0 > 64 {
		return
	}
	e.k0, e.k1, e.q0 = k0, k1, k0
	if e.quote != 0 {
		// The key must open with the quote that closes it, escaped the same way.
		open := k0 - 1
		if open < 0 || s[open] != e.quote {
			return
		}
		if e.escaped {
			if open--; open < 0 || s[open] != '\\' {
				return
			}
		}
		e.q0 = open
	}
	if e.class = classify(s[k0:k1]); e.class == kNone {
		return
	}
	eq := s[i] == '='
	switch e.class {
	case kPassword:
		if eq && sc.connPair(&e) {
			return
		}
		sc.config(&e)
	case kSecret:
		sc.config(&e)
	case kAWSSecret:
		if sc.value(&e, setSpace) && e.vb-e.va == 40 && run(s, e.va, cB64) == e.vb && mixed(s[e.va:e.vb]) &&
			!placeholder(s[e.va:e.vb]) && !is(at(s, e.vb), cEquals) {
			sc.add(AWSSecretKey, e.va, e.vb)
			return
		}
		sc.config(&e)
	case kAccountKey:
		if eq && sc.value(&e, setSemi) && e.vb-e.va >= 40 && e.vb-e.va <= 256 && run(s, e.va, cB64|cEquals) == e.vb && !placeholder(s[e.va:e.vb]) {
			sc.add(AzureAccountKey, e.va, e.vb)
		}
	case kSig:
		if eq && e.quote == 0 && (at(s, k0-1) == '?' || at(s, k0-1) == '&') && sasQuery(s, k0) &&
			sc.value(&e, setQuery) && e.vb-e.va >= 16 && !placeholderValue(s[e.va:e.vb]) {
			sc.add(AzureSAS, e.va, e.vb)
		}
	case kAuthorization:
		if !eq {
			sc.authorization(&e)
		}
	}
}

// at returns s[k], or 0 outside s.
func at(s string, k int) byte {
	if k < 0 || k >= len(s) {
		return 0
	}
	return s[k]
}

// value reads the value after the separator: a quoted string (to its closing quote on
// the same line), or a bare value up to a byte of set. It reports whether the value is
// non-empty.
func (sc *scanner) value(e *entry, set int) bool {
	s := sc.s
	v := e.sep + 1
	for n := 0; n < 8 && v < len(s) && (s[v] == ' ' || s[v] == '\t'); n++ {
		v++
	}
	escaped := false
	if v+1 < len(s) && s[v] == '\\' && (s[v+1] == '"' || s[v+1] == '\'') {
		escaped = true
		v++
	}
	e.vquote = 0
	switch c := at(s, v); {
	case c == '"' || c == '\'' || c == '`':
		qs := setDQ
		switch c {
		case '\'':
			qs = setSQ
		case '`':
			qs = setBQ
		}
		e.vquote = c
		e.va = v + 1
		var j int
		if escaped {
			j = sc.next(e.va, qs)
		} else {
			j = sc.stringEnd(e.va, qs, c)
		}
		if j >= len(s) || s[j] != c {
			return false // unterminated on its line
		}
		e.vb = j
		if escaped && e.vb > e.va && s[e.vb-1] == '\\' {
			e.vb--
		}
		e.afterValue = j + 1
	case escaped:
		return false
	case c == '{' && set == setSemi:
		e.vquote = '{'
		e.va = v + 1
		j := sc.next(e.va, setBrace)
		if j >= len(s) || s[j] != '}' {
			return false
		}
		e.vb, e.afterValue = j, j+1
	default:
		e.va = v
		e.vb = sc.next(v, set)
		e.afterValue = e.vb
		for e.vb > e.va && (s[e.vb-1] == ' ' || s[e.vb-1] == '\t') {
			e.vb--
		}
	}
	return e.vb > e.va
}

// stringEnd returns the closing quote c of a string whose text starts at i, skipping
// quotes escaped with a backslash, or the line end or len(s) if it has none. Like next,
// it remembers its last answer, so strings searched from many anchors in one region are
// walked once.
func (sc *scanner) stringEnd(i, set int, c byte) int {
	m := &sc.strMemo[set]
	if sc.memos&(1<<(nSets+set)) != 0 && m.at > 0 && m.from <= i && i <= m.at {
		return m.at
	}
	s := sc.s
	j := sc.next(i, set)
	for j < len(s) && s[j] == c && j > i && s[j-1] == '\\' {
		j = sc.next(j+1, set)
	}
	*m = delimMemo{from: i, at: j}
	sc.memos |= 1 << (nSets + set)
	return j
}
