package dlp

import "strings"

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
	// Every name below ends in one of these letters; most keys end in another.
	switch b[n-1] {
	case 'd', 'y', 'g', 'n', 't', 'e', 's':
	default:
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
	k0 := k1
	for k0 > 0 && k1-k0 <= 64 && is(s[k0-1], cKey) {
		k0--
	}
	if k0 == k1 || k1-k0 > 64 {
		return
	}
	e.k0, e.k1, e.q0 = k0, k1, k0
	if e.quote != 0 {
		open := k0 - 1
		if e.escaped {
			open--
			if open < 0 || s[open] != '\\' {
				return
			}
		}
		if open < 0 || s[open+boolInt(e.escaped)] != e.quote {
			return
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

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
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

// connPair reports a Password=, Pwd= or password= pair of a connection string, and
// whether it was one: a query parameter (?password= or &password=), a pair of an
// ADO.NET, ODBC or JDBC string (a ';' before the key or after the value), or a libpq
// keyword/value string (lower-case password= among host=, dbname=, user=, port= or
// sslmode=).
func (sc *scanner) connPair(e *entry) bool {
	s := sc.s
	if e.quote != 0 {
		return false
	}
	if p := at(s, e.k0-1); p == '?' || p == '&' {
		if sc.value(e, setQuery) && !placeholderValue(s[e.va:e.vb]) {
			sc.add(queryKind(s, e.k0), e.va, e.vb)
		}
		return true
	}
	p := e.k0 - 1
	for p >= 0 && (s[p] == ' ' || s[p] == '\t') {
		p--
	}
	semiBefore := at(s, p) == ';'
	// Without a ';' before the key, a bare value followed by ';' must be one word: in
	// f(password=pw, port=5432); the ';' belongs to the code.
	// In code, password = 'x'; is a statement: spaces around the '=' rule it out.
	semiAfter := !semiBefore && !e.spaced && at(s, e.sep+1) != ' ' && sc.value(e, setSemi) &&
		at(s, skipSpace(s, e.afterValue)) == ';' && (e.vquote != 0 || e.vb-e.va <= 256 && !strings.ContainsAny(s[e.va:e.vb], " \t,()"))
	if semiBefore || semiAfter {
		if sc.value(e, setSemi) && !placeholderValue(s[e.va:e.vb]) {
			sc.add(ConnPassword, e.va, e.vb)
		}
		return true
	}
	if s[e.k0:e.k1] == "password" && !e.spaced && (e.k0 == 0 || is(s[e.k0-1], cSpace)) &&
		sc.value(e, setSpace) && libpq(s, e.k0, e.afterValue) {
		// password=pw, or password=pw) is a keyword argument in code.
		if !placeholderValue(s[e.va:e.vb]) && at(s, e.vb) != ',' && at(s, e.vb) != ')' {
			sc.add(ConnPassword, e.va, e.vb)
		}
		return true
	}
	return false
}

func skipSpace(s string, k int) int {
	for k < len(s) && (s[k] == ' ' || s[k] == '\t') {
		k++
	}
	return k
}

// queryKind says whether the password= query parameter before k belongs to a
// connection URL (jdbc:mysql://…?user=…&password=…) or another URL.
func queryKind(s string, k int) Kind {
	for j := k - 1; j >= 0 && k-j <= 512; j-- {
		c := s[j]
		if is(c, cSpace) || c == '"' || c == '\'' {
			break
		}
		if c == ':' && has(s, j, "://") {
			a := j
			for a > 0 && j-a < 32 && (is(s[a-1], cAlnum) || s[a-1] == '+' || s[a-1] == '.' || s[a-1] == '-') {
				a--
			}
			if connScheme(s[a:j]) {
				return ConnPassword
			}
			break
		}
	}
	return URLPassword
}

// libpq reports whether the key at k0 (whose value ends at vb) stands among libpq
// keyword/value pairs: the word before it or the word after its value is host=,
// hostaddr=, dbname=, user=, port= or sslmode=.
func libpq(s string, k0, vb int) bool {
	j := k0
	for j > 0 && (s[j-1] == ' ' || s[j-1] == '\t') {
		j--
	}
	w := j
	for w > 0 && j-w < 128 && !is(s[w-1], cSpace) && s[w-1] != '"' && s[w-1] != '\'' {
		w--
	}
	if libpqKeyword(s, w) {
		return true
	}
	return libpqKeyword(s, skipSpace(s, vb))
}

func libpqKeyword(s string, k int) bool {
	for _, w := range []string{"host=", "hostaddr=", "dbname=", "user=", "port=", "sslmode="} {
		if has(s, k, w) {
			return true
		}
	}
	return false
}

// sasQuery reports whether the query around the sig= at k also has an sv= (signed
// version) parameter, as every Azure SAS does.
func sasQuery(s string, k int) bool {
	a, b := k, k
	for a > 0 && k-a < 1024 && !urlValueStop(s[a-1]) {
		a--
	}
	for b < len(s) && b-k < 1024 && !urlValueStop(s[b]) {
		b++
	}
	q := s[a:b]
	for j := 0; j+3 <= len(q); j++ {
		if q[j:j+3] == "sv=" && j > 0 && (q[j-1] == '?' || q[j-1] == '&') {
			return true
		}
	}
	return false
}

func urlValueStop(c byte) bool {
	return is(c, cSpace) || c == '"' || c == '\'' || c == '<' || c == '>' || c == '`'
}

// authorization reports the credential of an HTTP Authorization header: the word after
// a scheme (Bearer, Basic, token, …), or a bare credential of 16 bytes or more.
func (sc *scanner) authorization(e *entry) {
	s := sc.s
	v := skipSpace(s, e.sep+1)
	if c := at(s, v); c == '"' || c == '\'' {
		v++
	}
	w := run(s, v, cUpper|cLower)
	a := v
	if w > v && w-v <= 16 && at(s, w) == ' ' {
		a = skipSpace(s, w)
	}
	b := a
	for b < len(s) && b-a < 4096 && (is(s[b], cB64URL|cPlus|cSlash|cEquals) || s[b] == '.' || s[b] == '~') {
		b++
	}
	n := b - a
	if n < 8 || a == v && n < 16 || placeholderValue(s[a:b]) {
		return
	}
	sc.add(HTTPAuth, a, b)
}

// config reports the value of a configuration entry whose key names a secret:
//
//   - a JSON or Python member, "key": "value" or 'key': 'value', anywhere;
//   - an env file or shell line, KEY=value or export KEY="value", at the start of a line;
//   - an INI, TOML, .properties or YAML entry, key = value or key: value, at the start of
//     a line (after indentation, or "- " in a YAML list), whose value is quoted or is a
//     single word with nothing but a comment after it.
//
// Values shorter than four bytes, placeholders, numbers, booleans and values that read
// as code (a call, an index, a trailing comma) are not secrets.
func (sc *scanner) config(e *entry) {
	s := sc.s
	colon := s[e.sep] == ':'
	switch {
	case e.quote != 0:
		if !colon || !sc.value(e, setSpace) || e.vquote != e.quote {
			return
		}
	case lineStart(s, e.q0):
		if !sc.value(e, setSpace) {
			return
		}
		rest := skipSpace(s, e.afterValue)
		switch c := at(s, rest); {
		case rest >= len(s), c == '\n', c == '\r', c == '#':
		case e.vquote != 0 && (c == ',' || c == ';'):
		default:
			return // more follows on the line: "a" + b, or a sentence
		}
		if e.vquote == 0 {
			v := head(s[e.va:e.vb])
			if codeLike(v) || camelCase(v) || dotted(v) {
				return
			}
			// "password = value" is as likely an assignment in code as an INI entry: a
			// bare word of letters (self.password, token.OP) is taken for a variable.
			if e.spaced && s[e.sep] == '=' && runDots(v, 0, cUpper|cLower|cUnderscore) == len(v) {
				return
			}
		}
	default:
		return
	}
	v := s[e.va:e.vb]
	if len(v) < 4 || placeholderValue(v) || numeric(head(v)) || sameName(v, s[e.k0:e.k1]) {
		return
	}
	sc.add(ConfigSecret, e.va, e.vb)
}

// numeric reports whether v is made of digits and the punctuation of versions, dates
// and times: "pbkdf2-password": "1.2.1" names a package.
func numeric(v string) bool {
	for k := 0; k < len(v); k++ {
		if c := v[k]; !is(c, cDigit) && c != '.' && c != '-' && c != ':' {
			return false
		}
	}
	return true
}

// sameName reports whether value and key are the same name but for case and '_', '-',
// '.' (IETFToken = "ietf-token", password: password): an enum or a variable.
func sameName(value, key string) bool {
	norm := func(s string) (string, bool) {
		var buf [64]byte
		n := 0
		for k := 0; k < len(s); k++ {
			if c := s[k]; c != '_' && c != '-' && c != '.' {
				if n == len(buf) {
					return "", false
				}
				buf[n] = lower(c)
				n++
			}
		}
		return string(buf[:n]), true
	}
	a, ok1 := norm(value)
	b, ok2 := norm(key)
	return ok1 && ok2 && a == b
}

// dotted reports whether v is a member access in code: identifiers joined by '.'
// (options.password, self.token).
func dotted(v string) bool {
	if !is(v[0], cUpper|cLower|cUnderscore) || !strings.Contains(v, ".") || v[len(v)-1] == '.' {
		return false
	}
	return runDots(v, 0, cWord) == len(v)
}

// camelCase reports whether v reads as an identifier in code: letters alone, starting
// lower-case, with a lower-case letter followed by an upper-case one (refreshToken), or
// a member access (options?.token). Random passwords hold digits.
func camelCase(v string) bool {
	if strings.Contains(v, "?.") {
		return true
	}
	if run(v, 0, cUpper|cLower) != len(v) || !is(v[0], cLower) {
		return false
	}
	for k := 1; k < len(v); k++ {
		if is(v[k-1], cLower) && is(v[k], cUpper) {
			return true
		}
	}
	return false
}

// lineStart reports whether only indentation, "export ", "set " or a YAML "- " stands
// between the start of the line and k.
func lineStart(s string, k int) bool {
	j := k
	for j > 0 && (s[j-1] == ' ' || s[j-1] == '\t') {
		j--
	}
	for _, p := range []string{"export", "set", "-"} {
		if j < k && j >= len(p) && s[j-len(p):j] == p {
			j -= len(p)
			for j > 0 && (s[j-1] == ' ' || s[j-1] == '\t') {
				j--
			}
			break
		}
	}
	return j == 0 || s[j-1] == '\n' || s[j-1] == '\r'
}

// codeLike reports whether a bare value reads as code rather than as a literal: a call
// or an index, a member access such as os.environ, or a trailing comma or semicolon.
func codeLike(v string) bool {
	for k := 0; k < len(v); k++ {
		switch v[k] {
		case '(', ')', '[', ']', '{', '}':
			return true
		}
	}
	switch v[len(v)-1] {
	case ',', ';':
		return true
	}
	return false
}

// placeholderValue reports whether a password or secret value is a stand-in: empty, a
// template or variable reference (${X}, $X, %s, {x}, <x>, [REDACTED:…]), masked (****,
// xxxx, ...), a word such as "password", "secret", "null" or "string", or one that
// [placeholder] rejects.
func placeholderValue(v string) bool {
	if v == "" {
		return true
	}
	v = head(v)
	switch v[0] {
	case '$', '<', '{', '[', '%', '@', '!', '&', '*', '|', '>':
		return true
	case '/', '~':
		return true // a path: PWD=/home/deploy, password_file: ~/.pgpass
	}
	if contains(v, "...") || contains(v, "{{") || placeholder(v) {
		return true
	}
	masked := true
	for k := 0; k < len(v); k++ {
		if c := v[k]; c != 'x' && c != 'X' && c != '*' && c != '.' && c != '#' && c != '-' && c != '_' {
			masked = false
			break
		}
	}
	if masked {
		return true
	}
	if len(v) > 12 {
		return false
	}
	var buf [12]byte
	for k := 0; k < len(v); k++ {
		buf[k] = lower(v[k])
	}
	switch string(buf[:len(v)]) {
	case "password", "passwd", "pass", "pwd", "secret", "token", "apikey", "api_key",
		"null", "none", "nil", "undefined", "true", "false", "yes", "no", "on", "off",
		"string", "str", "text", "required", "optional", "changeme", "hunter2", "read", "write":
		return true
	}
	return false
}

// head is the start of a value that heuristics read: at most 512 bytes, so that values
// that overlap (password=password=…) cost a bounded amount each.
func head(v string) string { return v[:min(len(v), 512)] }

// runDots is run that also crosses '.'.
func runDots(s string, i int, class uint16) int {
	for i < len(s) && (ctab[s[i]]&class != 0 || s[i] == '.') {
		i++
	}
	return i
}

// stringEnd returns the closing quote c of a string whose text starts at i, skipping
// quotes escaped with a backslash, or the line end or len(s) if it has none. Like next,
// it remembers its last answer, so strings searched from many anchors in one region are
// walked once.
func (sc *scanner) stringEnd(i, set int, c byte) int {
	m := &sc.strMemo[set]
	if m.at > 0 && m.from <= i && i <= m.at {
		return m.at
	}
	s := sc.s
	j := sc.next(i, set)
	for j < len(s) && s[j] == c && j > i && s[j-1] == '\\' {
		j = sc.next(j+1, set)
	}
	*m = delimMemo{from: i, at: j}
	return j
}
