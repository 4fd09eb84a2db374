// Package plaintext keeps text that is not plain out of a terminal or a
// file a person reads: a name or a line that holds a control character
// (an escape sequence, a carriage return, a newline) or invalid UTF-8 is
// shown quoted, as Go quotes a string, and plain text as it is. The text
// is often someone else's choice: a tool name the model called, a path
// its arguments derived, an argument name a server listed.
package plaintext

import (
	"strconv"
	"unicode/utf8"
)

// Quote returns s as it is if it is plain (valid UTF-8, every character
// printable in strconv.IsPrint's sense: letters, marks, numbers,
// punctuation, symbols and the ASCII space), and strconv.Quote(s) if not.
func Quote(s string) string {
	if Plain(s) {
		return s
	}
	return strconv.Quote(s)
}

// Plain reports whether s is valid UTF-8 of printable characters only.
func Plain(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !strconv.IsPrint(r) {
			return false
		}
	}
	return true
}
