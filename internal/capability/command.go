package capability

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// maxCommandLen is the longest command line accepted, in bytes: the longest
// single argument (the LINE of `sh -c LINE`) that execve passes on Linux,
// MAX_ARG_STRLEN less its terminating NUL.
const maxCommandLen = 128<<10 - 1

// codeBuiltins are the bash builtins that can run shell code given as a
// literal argument: directly (eval, source, trap), by reaching other
// builtins (command, builtin), by loading it (enable -f), through callbacks
// and word lists (mapfile -C, compgen -W), or by evaluating an array
// subscript in a variable name, which runs $(...) even from a single-quoted
// word: 'declare' 'a[$(id)]=1' (the parser reads a quoted keyword as a plain
// command, bash still runs the builtin). A simple command running one is
// Shell. TestParseCommandBuiltinsRunCode asks bash which builtins do this.
var codeBuiltins = map[string]bool{
	"eval": true, ".": true, "source": true, "trap": true, "command": true, "builtin": true,
	"enable": true, "fc": true, "compgen": true, "complete": true, "compopt": true, "bind": true,
	"mapfile": true, "readarray": true, "declare": true, "typeset": true, "local": true,
	"export": true, "readonly": true, "let": true,
}

// nameBuiltins are the bash builtins that evaluate an array subscript in a
// variable-name argument (printf -v, read, test -v, [ -v, wait -p, unset): a
// simple command running one with a "[" in any argument is Shell.
var nameBuiltins = map[string]bool{
	"printf": true, "read": true, "test": true, "[": true, "wait": true, "unset": true, "getopts": true,
}

// runsShellCode reports whether the builtin argv[0] could run code from its
// literal arguments.
func runsShellCode(argv []string) bool {
	if codeBuiltins[argv[0]] {
		return true
	}
	if nameBuiltins[argv[0]] {
		for _, a := range argv[1:] {
			if strings.IndexByte(a, '[') >= 0 {
				return true
			}
		}
	}
	return false
}

// ParseCommand derives the exec capability of a command-line string
// argument, one that a server hands to a shell (sh -c, bash -c).
//
// A line that parses unambiguously, as POSIX sh and as bash
// (mvdan.cc/sh/v3/syntax), as ONE simple command whose words are all literals
// (quoted or not) with no expansions gives Program (argv[0]) and Argv (the
// exact words after quote removal and line continuations). Anything with
// shell syntax — pipes, ";", "&&", "||", "&", redirections, command or
// process substitution, parameter or arithmetic expansion, globs (* ? [ ]
// unquoted), brace expansion, an unquoted "~" anywhere, leading assignments
// (FOO=1 cmd), subshells, here-documents, functions, keywords, comments,
// more than one command, "$" or "`" even where a shell would keep it
// literally, control characters outside quotes — gives Shell: true with
// Command set to the line and Program/Argv empty. So does a simple command
// running a bash builtin that can run code from its literal arguments: eval,
// source, ".", trap, command, builtin, the declaration builtins (even when
// quoted, 'declare', which the parser takes for a plain command), mapfile,
// compgen and the like always; printf, read, test, "[", wait, unset and
// getopts when an argument has a "[" (an array subscript, which bash
// evaluates: printf -v 'a[$(id)]' x runs id). Where the parser and a
// second, independent reading of the line disagree on the words, the line
// is Shell too.
//
// Empty or blank lines, NUL bytes, invalid UTF-8, lines longer than sh -c
// accepts (131071 bytes), lines that do not parse (an unterminated quote, a
// here-document without its end) and simple commands with an empty program
// are errors.
//
// A simple command is only as harmless as its program: "bash -c 'rm -rf /'"
// is simple, with Program "bash", and so are "env rm x", "sudo rm x",
// "xargs rm" and "exec rm x". The policy decides; only an allow-list of
// programs is sound, since a rule denying "rm" does not see "env rm".
// Program is the word as written: the shell looks it up in PATH.
func ParseCommand(line string) (Capability, error) {
	switch {
	case len(line) > maxCommandLen:
		return Capability{}, fmt.Errorf("command line of %d bytes is too long (at most %d)", len(line), maxCommandLen)
	case strings.IndexByte(line, 0) >= 0:
		return Capability{}, errors.New("command line contains a NUL byte")
	case !utf8.ValidString(line):
		return Capability{}, errors.New("command line is not valid UTF-8")
	case strings.Trim(line, " \t\n") == "":
		return Capability{}, errors.New("empty command line")
	}
	f, err := parseShell(line, syntax.LangBash)
	if err != nil {
		return Capability{}, fmt.Errorf("parsing command line: %w", err)
	}
	if len(f.Stmts) == 0 && len(f.Last) == 0 {
		return Capability{}, errors.New("empty command line")
	}
	shell := Capability{Kind: Exec, Shell: true, Command: line}
	words, ok := simpleWords(f)
	if !ok {
		return shell, nil
	}
	if lit, ok := literalWords(line); !ok || !slices.Equal(lit, words) {
		return shell, nil
	}
	if f, err := parseShell(line, syntax.LangPOSIX); err != nil {
		return shell, nil
	} else if posix, ok := simpleWords(f); !ok || !slices.Equal(posix, words) {
		return shell, nil
	}
	if words[0] == "" {
		return Capability{}, errors.New("command line has an empty program")
	}
	if runsShellCode(words) {
		return shell, nil
	}
	return Capability{Kind: Exec, Program: words[0], Argv: words}, nil
}

func parseShell(line string, lang syntax.LangVariant) (*syntax.File, error) {
	p := syntax.NewParser(syntax.KeepComments(true), syntax.Variant(lang))
	return p.Parse(strings.NewReader(line), "")
}

// simpleWords returns the words of f after quote removal when f is one
// simple command of literal words: no comments, operators, redirections or
// assignments, and every word made of unquoted literals, single quotes and
// double quotes holding only literals.
func simpleWords(f *syntax.File) ([]string, bool) {
	if len(f.Stmts) != 1 || len(f.Last) > 0 {
		return nil, false
	}
	st := f.Stmts[0]
	if len(st.Comments) > 0 || st.Negated || st.Background || st.Coprocess || st.Disown ||
		len(st.Redirs) > 0 || st.Semicolon.IsValid() {
		return nil, false
	}
	call, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || len(call.Assigns) > 0 || len(call.Args) == 0 {
		return nil, false
	}
	words := make([]string, 0, len(call.Args))
	for _, w := range call.Args {
		var b strings.Builder
		for _, part := range w.Parts {
			switch part := part.(type) {
			case *syntax.Lit:
				unescape(&b, part.Value, "")
			case *syntax.SglQuoted:
				if part.Dollar {
					return nil, false
				}
				b.WriteString(part.Value)
			case *syntax.DblQuoted:
				if part.Dollar {
					return nil, false
				}
				for _, inner := range part.Parts {
					lit, ok := inner.(*syntax.Lit)
					if !ok {
						return nil, false
					}
					unescape(&b, lit.Value, "$`\"\\")
				}
			default:
				return nil, false
			}
		}
		words = append(words, b.String())
	}
	return words, true
}

// unescape writes s with its backslashes removed: outside double quotes
// (escapable == "") a backslash quotes any next character; inside them only
// the characters in escapable, and other backslashes are kept. A trailing
// backslash is kept.
func unescape(b *strings.Builder, s, escapable string) {
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && (escapable == "" || strings.IndexByte(escapable, s[i+1]) >= 0) {
			i++
		}
		b.WriteByte(s[i])
	}
}

// shellSpecial are the characters that, unquoted, make a shell do more than
// split words and remove quotes.
const shellSpecial = "|&;<>()$`*?[]{}~"

// literalWords is the second reading of a line, independent of the parser:
// it splits line into words the way a POSIX shell does when the line is one
// simple command of literal words, and reports false at the first thing
// that would make the shell do anything else — an unquoted special
// character or control character, "$" or "`" inside double quotes, a "#"
// starting a word, an unquoted "=" in the first word, a second line. The
// one unquoted brace pair accepted is a whole word "{}" (find -exec), which
// no shell expands.
func literalWords(line string) ([]string, bool) {
	var (
		words  []string
		w      []byte
		inWord bool
		ended  bool // a newline ended the command
	)
	begin := func() bool {
		if !inWord {
			if ended {
				return false
			}
			inWord = true
		}
		return true
	}
	for i := 0; i < len(line); {
		c := line[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, string(w))
				w, inWord = w[:0], false
			}
			if c == '\n' && len(words) > 0 {
				ended = true
			}
			i++
		case c == '\\':
			if i+1 < len(line) && line[i+1] == '\n' { // line continuation
				i += 2
				continue
			}
			if !begin() {
				return nil, false
			}
			if i+1 == len(line) {
				w = append(w, '\\')
				i++
				continue
			}
			w = append(w, line[i+1])
			i += 2
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 || !begin() {
				return nil, false
			}
			w = append(w, line[i+1:i+1+j]...)
			i += j + 2
		case c == '"':
			if !begin() {
				return nil, false
			}
			for i++; ; {
				if i >= len(line) {
					return nil, false
				}
				c := line[i]
				if c == '"' {
					i++
					break
				}
				if c == '$' || c == '`' {
					return nil, false
				}
				if c == '\\' && i+1 < len(line) {
					switch line[i+1] {
					case '\n':
						i += 2
						continue
					case '$', '`', '"', '\\':
						w = append(w, line[i+1])
						i += 2
						continue
					}
				}
				w = append(w, c)
				i++
			}
		case c == '{' && !inWord && strings.HasPrefix(line[i:], "{}") &&
			(i+2 == len(line) || strings.IndexByte(" \t\n", line[i+2]) >= 0):
			if !begin() {
				return nil, false
			}
			w = append(w, "{}"...)
			i += 2
		case c == '#' && !inWord, c == '=' && len(words) == 0,
			c < ' ' || c == 0x7f, strings.IndexByte(shellSpecial, c) >= 0:
			return nil, false
		default:
			if !begin() {
				return nil, false
			}
			w = append(w, c)
			i++
		}
	}
	if inWord {
		words = append(words, string(w))
	}
	return words, len(words) > 0
}

// FromArgv derives the exec capability of an argv array argument: Program =
// argv[0], Argv = a copy of argv. No shell is involved, so no word is
// special. An empty argv, an empty program, a NUL byte (execve would cut
// the word there) or invalid UTF-8 in any word is an error.
func FromArgv(argv []string) (Capability, error) {
	if len(argv) == 0 {
		return Capability{}, errors.New("empty argv")
	}
	if argv[0] == "" {
		return Capability{}, errors.New("argv has an empty program")
	}
	for i, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			return Capability{}, fmt.Errorf("argv[%d] %q contains a NUL byte", i, a)
		}
		if !utf8.ValidString(a) {
			return Capability{}, fmt.Errorf("argv[%d] %q is not valid UTF-8", i, a)
		}
	}
	return Capability{Kind: Exec, Program: argv[0], Argv: slices.Clone(argv)}, nil
}
