package dlp

import "strings"

// This file reads configuration entries named like secrets, and tells their values from
// the code, types, references and placeholders that share their syntax.

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
			if codeLike(v) || camelCase(v) || dotted(v) || strings.IndexByte("!&*|>@", v[0]) >= 0 {
				return // code, or YAML's tags, anchors, aliases and block scalars
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
// template or variable reference (${X}, $X, %s, {x}, <x>, [REDACTED:…]), a path, masked
// (****, xxxx, ...), a word such as "password", "secret", "null", "string" or
// "changeme", or one that [placeholder] rejects.
func placeholderValue(v string) bool {
	if v == "" {
		return true
	}
	v = head(v)
	switch v[0] {
	case '$', '<', '{', '[':
		return true
	case '%':
		if len(v) > 1 && strings.IndexByte("sdvq(", v[1]) >= 0 {
			return true // a format verb; %21 is an escaped '!'
		}
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
