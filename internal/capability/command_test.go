package capability

import (
	"bytes"
	"context"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"mvdan.cc/sh/v3/syntax"
)

var commandCmp = cmpopts.EquateComparable(netip.Addr{})

// commandTests are the rows of TestParseCommand. argv set: a simple command
// with that argv; shell: Shell; wantErr: an error containing it.
var commandTests = []struct {
	name    string
	line    string
	argv    []string
	shell   bool
	wantErr string
}{
	// Simple commands: literal words after quote removal.
	{name: "plain", line: "ls -la /tmp", argv: []string{"ls", "-la", "/tmp"}},
	{name: "quoted words", line: `git 'commit' "-m" 'a b'`, argv: []string{"git", "commit", "-m", "a b"}},
	{name: "single-quoted dollar", line: `echo '$x'`, argv: []string{"echo", "$x"}},
	{name: "single-quoted everything", line: `echo '|;&<>()$` + "`" + `*?[]{}~#\"'`, argv: []string{"echo", "|;&<>()$`*?[]{}~#\\\""}},
	{name: "bash -c is a program", line: "bash -c 'rm -rf /'", argv: []string{"bash", "-c", "rm -rf /"}},
	{name: "surrounding blanks", line: " \t ls  -l \t", argv: []string{"ls", "-l"}},
	{name: "trailing newline", line: "ls -l\n", argv: []string{"ls", "-l"}},
	{name: "leading newlines", line: "\n\nls", argv: []string{"ls"}},
	{name: "line continuation", line: "ls \\\n-la", argv: []string{"ls", "-la"}},
	{name: "line continuation inside a word", line: "l\\\ns", argv: []string{"ls"}},
	{name: "line continuation at start", line: "\\\nls", argv: []string{"ls"}},
	{name: "line continuation at end", line: "echo x\\\n", argv: []string{"echo", "x"}},
	{name: "escaped space", line: `echo a\ b`, argv: []string{"echo", "a b"}},
	{name: "escaped specials", line: `echo \$x \* \? \[a\] \{a,b\} \~ \# \; \| \& \< \> \( \) \' \" \\`, argv: []string{"echo", "$x", "*", "?", "[a]", "{a,b}", "~", "#", ";", "|", "&", "<", ">", "(", ")", "'", `"`, `\`}},
	{name: "double-quote escapes", line: `echo "a\"b\\c\d\$e\` + "`" + `f"`, argv: []string{"echo", `a"b\c\d$e` + "`f"}},
	{name: "double-quoted line continuation", line: "echo \"a\\\nb\"", argv: []string{"echo", "ab"}},
	{name: "single-quoted backslash newline", line: "echo 'a\\\nb'", argv: []string{"echo", "a\\\nb"}},
	{name: "double-quoted newline", line: "echo \"a\nb\"", argv: []string{"echo", "a\nb"}},
	{name: "double-quoted specials", line: `echo "| ; & < > ( ) * ? [ ] { } ~ # ' !"`, argv: []string{"echo", "| ; & < > ( ) * ? [ ] { } ~ # ' !"}},
	{name: "adjacent quotes", line: `echo 'q'\''r' a"b"'c'`, argv: []string{"echo", "q'r", "abc"}},
	{name: "empty words", line: `echo "" ''`, argv: []string{"echo", "", ""}},
	{name: "trailing backslash", line: `echo \`, argv: []string{"echo", `\`}},
	{name: "find -exec braces", line: `find . -name '*.go' -exec rm {} \;`, argv: []string{"find", ".", "-name", "*.go", "-exec", "rm", "{}", ";"}},
	{name: "hash inside a word", line: "curl http://x/#frag", argv: []string{"curl", "http://x/#frag"}},
	{name: "equals in an argument", line: "make PREFIX=/usr a=b =c", argv: []string{"make", "PREFIX=/usr", "a=b", "=c"}},
	{name: "quoted equals in the program", line: `'FOO=1' cmd`, argv: []string{"FOO=1", "cmd"}},
	{name: "bang inside a word", line: "echo hi! a!b", argv: []string{"echo", "hi!", "a!b"}},
	{name: "punctuation", line: "printf %s,%d:@+^-. x", argv: []string{"printf", "%s,%d:@+^-.", "x"}},
	{name: "unicode", line: "echo héllo 'wörld' \"日本\"", argv: []string{"echo", "héllo", "wörld", "日本"}},
	{name: "path program", line: "/usr/bin/env -i ./x", argv: []string{"/usr/bin/env", "-i", "./x"}},
	{name: "one word", line: "x", argv: []string{"x"}},
	{name: "printf without brackets", line: "printf '%s\\n' x", argv: []string{"printf", `%s\n`, "x"}},
	{name: "test", line: "test -f /etc/passwd", argv: []string{"test", "-f", "/etc/passwd"}},
	{name: "quoted bracket test", line: "'[' -f x ']'", argv: []string{"[", "-f", "x", "]"}},
	{name: "read", line: "read -r x", argv: []string{"read", "-r", "x"}},
	{name: "external printf", line: "/usr/bin/printf -v 'a[x]' y", argv: []string{"/usr/bin/printf", "-v", "a[x]", "y"}},
	{name: "exec is a program", line: "exec rm -rf /", argv: []string{"exec", "rm", "-rf", "/"}},
	{name: "longest line", line: "echo " + strings.Repeat("a", maxCommandLen-5), argv: []string{"echo", strings.Repeat("a", maxCommandLen-5)}},

	// Shell syntax.
	{name: "pipe", line: "ls | sh", shell: true},
	{name: "pipe stderr", line: "ls |& cat", shell: true},
	{name: "list", line: "a; b", shell: true},
	{name: "trailing semicolon", line: "ls;", shell: true},
	{name: "and", line: "a && b", shell: true},
	{name: "or", line: "a || b", shell: true},
	{name: "background", line: "a &", shell: true},
	{name: "command substitution", line: "echo $(id)", shell: true},
	{name: "backquotes", line: "echo `id`", shell: true},
	{name: "command substitution in double quotes", line: `echo "$(id)"`, shell: true},
	{name: "backquotes in double quotes", line: "echo \"`id`\"", shell: true},
	{name: "parameter", line: "echo $HOME", shell: true},
	{name: "parameter braces", line: "echo ${HOME}", shell: true},
	{name: "parameter in double quotes", line: `echo "$x"`, shell: true},
	{name: "positional", line: "echo $1 $@ $#", shell: true},
	{name: "lone dollar", line: "echo a$", shell: true},
	{name: "lone dollar in double quotes", line: `echo "a$"`, shell: true},
	{name: "arithmetic", line: "echo $((1+1))", shell: true},
	{name: "ANSI-C quotes", line: `echo $'\x41'`, shell: true},
	{name: "locale quotes", line: `echo $"x"`, shell: true},
	{name: "process substitution", line: "diff <(ls) <(ls)", shell: true},
	{name: "input redirection", line: "cat < /etc/passwd", shell: true},
	{name: "output redirection", line: "echo x > /tmp/y", shell: true},
	{name: "append redirection", line: "echo x >> /tmp/y", shell: true},
	{name: "fd redirection", line: "ls 2>&1", shell: true},
	{name: "here-string", line: "cat <<< x", shell: true},
	{name: "here-document with body", line: "cat <<EOF\nx\nEOF", shell: true},
	{name: "star", line: "rm *", shell: true},
	{name: "question mark", line: "ls ?", shell: true},
	{name: "bracket glob", line: "ls [ab]", shell: true},
	{name: "glob inside a word", line: "ls /etc/pass*", shell: true},
	{name: "extglob", line: "ls @(a|b)", shell: true},
	{name: "brace expansion", line: "echo {a,b}", shell: true},
	{name: "brace sequence", line: "echo {1..3}", shell: true},
	{name: "brace inside a word", line: "cp x{,.bak}", shell: true},
	{name: "assignment", line: "FOO=1 cmd", shell: true},
	{name: "assignment only", line: "FOO=1", shell: true},
	{name: "PATH assignment", line: "PATH=/tmp ls", shell: true},
	{name: "subshell", line: "(cmd)", shell: true},
	{name: "block", line: "{ cmd; }", shell: true},
	{name: "comment", line: "cmd # comment", shell: true},
	{name: "comment only", line: "# just a comment", shell: true},
	{name: "comment on the next line", line: "ls\n# x", shell: true},
	{name: "two lines", line: "a\nb", shell: true},
	{name: "tilde", line: "ls ~", shell: true},
	{name: "tilde path", line: "ls ~/x", shell: true},
	{name: "tilde after equals", line: "echo a=~/x", shell: true},
	{name: "tilde inside a word", line: "echo a~b", shell: true},
	{name: "negation", line: "! ls", shell: true},
	{name: "if", line: "if true; then ls; fi", shell: true},
	{name: "for", line: "for i in a; do ls; done", shell: true},
	{name: "while", line: "while :; do :; done", shell: true},
	{name: "case", line: "case x in x) ls;; esac", shell: true},
	{name: "function", line: "f() { ls; }", shell: true},
	{name: "function keyword", line: "function f { ls; }", shell: true},
	{name: "test clause", line: "[[ -f x ]]", shell: true},
	{name: "arithmetic command", line: "((x++))", shell: true},
	{name: "time", line: "time ls", shell: true},
	{name: "coproc", line: "coproc ls", shell: true},
	{name: "declare", line: "declare -x A=1", shell: true},
	{name: "export", line: "export A=1", shell: true},
	{name: "let", line: "let x=1", shell: true},
	{name: "eval", line: "eval 'rm -rf /'", shell: true},
	{name: "source", line: "source ./x", shell: true},
	{name: "dot", line: ". ./x", shell: true},
	{name: "trap", line: "trap 'rm -rf /' EXIT", shell: true},
	{name: "quoted eval", line: "'eval' x", shell: true},
	{name: "quoted declare", line: "'declare' 'a[$(id)]=1'", shell: true},
	{name: "escaped let", line: "\\let x", shell: true},
	{name: "local", line: "local x", shell: true},
	{name: "mapfile callback", line: "mapfile -C 'id' -c 1", shell: true},
	{name: "compgen word list", line: "compgen -W '$(id)'", shell: true},
	{name: "command builtin", line: "command -v git", shell: true},
	{name: "printf -v subscript", line: "printf -v 'a[$(id)]' x", shell: true},
	{name: "read subscript", line: "read 'a[$(id)]'", shell: true},
	{name: "test -v subscript", line: "test -v 'a[$(id)]'", shell: true},
	{name: "bracket test (unquoted [ is a glob character)", line: "[ -f x ]", shell: true},
	{name: "bracket -v subscript", line: "'[' -v 'a[$(id)]' ']'", shell: true},
	{name: "wait -p subscript", line: "wait -p 'a[$(id)]'", shell: true},
	{name: "unset subscript", line: "unset 'a[$(id)]'", shell: true},
	{name: "printf with a bracket", line: "printf '[%s]' x", shell: true},
	{name: "carriage return", line: "ls\r", shell: true},
	{name: "escaped carriage return before newline", line: "echo x\\\r\n", shell: true},
	{name: "vertical tab", line: "ls\v-l", shell: true},
	{name: "escape character", line: "echo \x1b[31m", shell: true},
	{name: "DEL", line: "echo \x7f", shell: true},
	{name: "quoted program with assignment after", line: "'ls' A=1", argv: []string{"ls", "A=1"}},

	// Errors.
	{name: "empty", line: "", wantErr: "empty"},
	{name: "blanks", line: "   ", wantErr: "empty"},
	{name: "newlines", line: "\n\t\n", wantErr: "empty"},
	{name: "NUL", line: "a\x00b", wantErr: "NUL"},
	{name: "NUL in quotes", line: "echo 'a\x00b'", wantErr: "NUL"},
	{name: "unterminated single quote", line: "echo 'x", wantErr: "parsing"},
	{name: "unterminated double quote", line: `echo "x`, wantErr: "parsing"},
	{name: "unclosed here-document", line: "cat <<EOF", wantErr: "parsing"},
	{name: "unclosed subshell", line: "(ls", wantErr: "parsing"},
	{name: "lone keyword", line: "if", wantErr: "parsing"},
	{name: "lone close brace", line: "}", wantErr: "parsing"},
	{name: "invalid UTF-8", line: "echo \xff", wantErr: "UTF-8"},
	{name: "empty program", line: "'' x", wantErr: "empty program"},
	{name: "empty program double quotes", line: `"" x`, wantErr: "empty program"},
	{name: "too long", line: "echo " + strings.Repeat("a", maxCommandLen-4), wantErr: "long"},
}

func TestParseCommand(t *testing.T) {
	for _, tt := range commandTests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseCommand(tt.line)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("ParseCommand(%q) = %+v, want error containing %q", tt.line, got, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseCommand(%q) error = %q, want it to contain %q", tt.line, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseCommand(%q) error: %v", tt.line, err)
			}
			want := Capability{Kind: Exec, Shell: true, Command: tt.line}
			if !tt.shell {
				want = Capability{Kind: Exec, Program: tt.argv[0], Argv: tt.argv}
			}
			if diff := cmp.Diff(want, got, commandCmp); diff != "" {
				t.Errorf("ParseCommand(%q) mismatch (-want +got):\n%s", tt.line, diff)
			}
		})
	}
}

// TestParseCommandShells runs every simple row through the shells a server
// would hand the line to, and checks that they pass the program exactly the
// argv ParseCommand derived. The line's words become arguments of printf,
// which prints each followed by a NUL.
func TestParseCommandShells(t *testing.T) {
	for _, sh := range []string{"bash", "dash"} {
		bin, err := exec.LookPath(sh)
		if err != nil {
			t.Logf("%s not found: skipping it", sh)
			continue
		}
		for _, tt := range commandTests {
			if tt.shell || tt.wantErr != "" || !shellArgvFits(tt.line) {
				continue
			}
			t.Run(sh+"/"+tt.name, func(t *testing.T) {
				got, err := shellArgv(bin, tt.line)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tt.argv, got); diff != "" {
					t.Errorf("%s -c %q argv mismatch (-ParseCommand +%s):\n%s", sh, tt.line, sh, diff)
				}
			})
		}
	}
}

// shellArgvPrefix turns the words of a line into arguments of printf.
const shellArgvPrefix = `printf '%s\0' `

// shellArgvFits reports whether shellArgv can run line: with the prefix it
// must still fit in one argument of execve.
func shellArgvFits(line string) bool {
	return len(shellArgvPrefix)+len(line) <= maxCommandLen
}

// shellArgv returns the argv that the shell bin gives the simple command
// line, by running it as the arguments of printf.
func shellArgv(bin, line string) ([]string, error) {
	// Blanks, newlines and line continuations before the first word are
	// skipped by the shell; after "printf %s\0 " they would not be.
	for {
		trimmed := strings.TrimPrefix(strings.TrimLeft(line, " \t\n"), "\\\n")
		if trimmed == line {
			break
		}
		line = trimmed
	}
	cmd := exec.Command(bin, "-c", shellArgvPrefix+line)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "LC_ALL=C.UTF-8"}
	out, err := cmd.Output()
	if err != nil {
		return nil, err
	}
	return strings.Split(string(bytes.TrimSuffix(out, []byte{0})), "\x00"), nil
}

// TestParseCommandBuiltinsRunCode asks bash which of its builtins run shell
// code given as a literal, single-quoted argument — through eval, callbacks,
// or array subscripts in variable names ('a[$(id)]') — and checks that
// ParseCommand calls every such line Shell.
func TestParseCommandBuiltinsRunCode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs bash about a thousand times")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not found")
	}
	out, err := exec.Command(bash, "-c", "compgen -b").Output()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mark := dir + "/ran"
	probe := `'a[$(touch ` + mark + `)]'`
	code := `'touch ` + mark + `'`
	templates := []string{
		"B P", "B -v P", "B -p P", "B -a P", "B -r P", "B -n P", "B -R P", "B x P", "B ! -v P", "B x -a -v P",
		"B P=1", "B -W C", "B -C C -c 1", "B -F C x", "B C", "B -v P x ]", "B -n -p P",
	}
	var ran int
	for _, b := range strings.Fields(string(out)) {
		switch b {
		case "suspend", "kill", "exec", "exit", "logout":
			continue // they would stop, signal or end the shell rather than run the probe
		}
		for _, tmpl := range templates {
			line := strings.NewReplacer("B", b, "P", probe, "C", code).Replace(tmpl)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			cmd := exec.CommandContext(ctx, bash, "-c", line)
			cmd.Dir = dir
			cmd.Stdin = strings.NewReader("x\ny\n")
			_ = cmd.Run() // most lines are usage errors; only the mark matters
			cancel()
			if _, err := os.Stat(mark); err != nil {
				continue
			}
			ran++
			if err := os.Remove(mark); err != nil {
				t.Fatal(err)
			}
			if c, err := ParseCommand(line); err == nil && !c.Shell { // an error fails closed too
				t.Errorf("bash ran code from %q, but ParseCommand says simple: %q", line, c.Argv)
			}
		}
	}
	if ran == 0 {
		t.Fatal("bash ran no probe at all: the test is broken")
	}
	t.Logf("%d lines ran code", ran)
}

func TestFromArgv(t *testing.T) {
	tests := []struct {
		name    string
		argv    []string
		wantErr string
	}{
		{name: "simple", argv: []string{"ls", "-la", "/tmp"}},
		{name: "shell words are not special", argv: []string{"echo", "$(id)", "*", "~", "a;b", "|"}},
		{name: "bash -c", argv: []string{"bash", "-c", "rm -rf /"}},
		{name: "empty words after the program", argv: []string{"x", "", ""}},
		{name: "nil", argv: nil, wantErr: "empty argv"},
		{name: "empty", argv: []string{}, wantErr: "empty argv"},
		{name: "empty program", argv: []string{""}, wantErr: "empty program"},
		{name: "empty program with args", argv: []string{"", "x"}, wantErr: "empty program"},
		{name: "NUL in program", argv: []string{"a\x00"}, wantErr: "NUL"},
		{name: "NUL in argument", argv: []string{"cat", "/srv/x\x00/../../etc/passwd"}, wantErr: "NUL"},
		{name: "invalid UTF-8", argv: []string{"cat", "\xff"}, wantErr: "UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FromArgv(tt.argv)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("FromArgv(%q) = %+v, %v; want error containing %q", tt.argv, got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("FromArgv(%q) error: %v", tt.argv, err)
			}
			want := Capability{Kind: Exec, Program: tt.argv[0], Argv: tt.argv}
			if diff := cmp.Diff(want, got, commandCmp); diff != "" {
				t.Errorf("FromArgv(%q) mismatch (-want +got):\n%s", tt.argv, diff)
			}
		})
	}

	// The capability does not share the caller's array.
	argv := []string{"ls", "/tmp"}
	c, err := FromArgv(argv)
	if err != nil {
		t.Fatal(err)
	}
	argv[0], argv[1] = "rm", "/"
	if c.Program != "ls" || c.Argv[0] != "ls" || c.Argv[1] != "/tmp" {
		t.Errorf("FromArgv result changed with its argument: %+v", c)
	}
}

// FuzzParseCommand checks that no line panics, that a simple command's
// argv starts with its program, and, with AEGIS_FUZZ_SHELL=1, that bash
// gives the program exactly that argv.
func FuzzParseCommand(f *testing.F) {
	for _, tt := range commandTests {
		f.Add(tt.line)
	}
	var bash string
	if os.Getenv("AEGIS_FUZZ_SHELL") == "1" {
		bash, _ = exec.LookPath("bash")
	}
	f.Fuzz(func(t *testing.T, line string) {
		c, err := ParseCommand(line)
		if err != nil {
			return
		}
		if c.Kind != Exec {
			t.Fatalf("ParseCommand(%q).Kind = %v", line, c.Kind)
		}
		if c.Shell {
			if c.Command != line || c.Program != "" || c.Argv != nil {
				t.Fatalf("ParseCommand(%q) = %+v: shell with program or wrong command", line, c)
			}
			return
		}
		if len(c.Argv) == 0 || c.Argv[0] != c.Program || c.Program == "" || c.Command != "" {
			t.Fatalf("ParseCommand(%q) = %+v: simple without program", line, c)
		}
		if bash != "" && shellArgvFits(line) {
			got, err := shellArgv(bash, line)
			if err != nil {
				t.Fatalf("bash -c %.200q: %v", line, err)
			}
			if !slices.Equal(c.Argv, got) {
				t.Fatalf("bash -c %.200q: ParseCommand argv %.200q, bash %.200q", line, c.Argv, got)
			}
		}
	})
}

// TestCommandLayers tests the two readings of a line on their own, so that
// each check can fail although the other reading would catch the same line.
func TestCommandLayers(t *testing.T) {
	tests := []struct {
		name   string
		line   string
		parser []string // simpleWords of the bash parse; nil: not simple
		lexer  []string // literalWords; nil: not literal
	}{
		{name: "plain", line: "ls -la", parser: []string{"ls", "-la"}, lexer: []string{"ls", "-la"}},
		{name: "quotes and escapes", line: `echo a\ b "x\"y\z\\" 'q'\''r' \`,
			parser: []string{"echo", "a b", `x"y\z\`, "q'r", `\`}, lexer: []string{"echo", "a b", `x"y\z\`, "q'r", `\`}},
		{name: "trailing semicolon", line: "ls;"},
		{name: "background", line: "ls &"},
		{name: "negation", line: "! ls", lexer: []string{"!", "ls"}},
		{name: "redirection", line: "ls >x"},
		{name: "comment", line: "ls # x"},
		{name: "comment only", line: "# x"},
		{name: "comment on the next line", line: "ls\n# x"},
		{name: "assignment", line: "A=1 ls"},
		{name: "two commands", line: "a\nb"},
		{name: "ANSI-C quotes", line: "echo $'x'"},
		{name: "locale quotes", line: `echo $"x"`},
		{name: "parameter", line: "echo $x"},
		{name: "parameter in double quotes", line: `echo "a$x"`},
		{name: "command substitution in double quotes", line: "echo \"`id`\""},
		{name: "subshell", line: "(ls)"},
		{name: "keyword", line: "time ls", lexer: []string{"time", "ls"}},
		{name: "let", line: "let x=1", lexer: []string{"let", "x=1"}},
		// The parser keeps these as literal words; the shell would not.
		{name: "glob", line: "rm *", parser: []string{"rm", "*"}},
		{name: "brace expansion", line: "echo {a,b}", parser: []string{"echo", "{a,b}"}},
		{name: "tilde", line: "ls ~", parser: []string{"ls", "~"}},
		{name: "lone dollar", line: "echo a$", parser: []string{"echo", "a$"}},
		{name: "carriage return", line: "ls\r", parser: []string{"ls"}},
		{name: "escaped carriage return", line: "echo x\\\r\n", parser: []string{"echo", "x"}, lexer: []string{"echo", "x\r"}},
		{name: "assignment-like first word", line: "9A=1 ls", parser: []string{"9A=1", "ls"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var parser []string
			if f, err := parseShell(tt.line, syntax.LangBash); err != nil {
				t.Fatalf("parsing %q: %v", tt.line, err)
			} else if words, ok := simpleWords(f); ok {
				parser = words
			}
			if diff := cmp.Diff(tt.parser, parser); diff != "" {
				t.Errorf("simpleWords(%q) mismatch (-want +got):\n%s", tt.line, diff)
			}
			lexer, ok := literalWords(tt.line)
			if ok != (lexer != nil) {
				t.Errorf("literalWords(%q) = %q, %v", tt.line, lexer, ok)
			}
			if diff := cmp.Diff(tt.lexer, lexer); diff != "" {
				t.Errorf("literalWords(%q) mismatch (-want +got):\n%s", tt.line, diff)
			}
		})
	}
}

func BenchmarkParseCommand(b *testing.B) {
	for _, line := range []string{`git commit -m 'fix: a b'`, `ls -la /tmp | grep x`} {
		b.Run(map[bool]string{true: "shell", false: "simple"}[strings.Contains(line, "|")], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ParseCommand(line); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
