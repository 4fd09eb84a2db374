package dlp

import "strings"

// This file reads the pairs that carry credentials in connection strings, URLs and HTTP
// headers: Password= and its kin, Azure's sig=, and Authorization.

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
	// Without a ';' before it, a pair followed by ';' must have no space around its '='
	// (password = 'x'; is a statement in code) and, bare, be one word (in
	// f(password=pw, port=5432); the ';' ends the code).
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
	w := runMax(s, v, 17, cUpper|cLower)
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
