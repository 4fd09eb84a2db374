package gateway

import (
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/aegis-mcp/aegis/internal/capability"
)

// RuleSelf is the rule that keeps aegis's own files from every wrapped
// server (R34): its configuration, policy and bindings files and its state
// directory, which holds the chain's signing key and the pins. No policy can
// allow what it refuses, and a shadow policy does not weaken it: a server
// that could rewrite the policy or the pins, or read chain.key, would undo
// every other decision.
const RuleSelf = "aegis:self"

// protectedPaths checks and sorts the protected paths of [Options], and
// drops those under another: each must be canonical, as the capabilities
// it is compared with are (absolute and clean). It returns them in NFC,
// and their fold keys for servers on case-insensitive volumes.
func protectedPaths(in []string) (paths, keys []string, err error) {
	out := make([]string, 0, len(in))
	for _, p := range in {
		if p == "" || p[0] != '/' || path.Clean(p) != p {
			return nil, nil, fmt.Errorf("gateway: protected path %q is not absolute and clean", p)
		}
		n, ok := capability.NormPath(p)
		if !ok {
			return nil, nil, fmt.Errorf("gateway: protected path %q is not valid UTF-8", p)
		}
		out = append(out, n)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	// Sorted, a path under another comes after it, though not always
	// next to it ("/a", "/a b", "/a/c"): check against every kept one.
	kept := out[:0]
	for _, p := range out {
		covered := false
		for _, k := range kept {
			if capability.PathUnder(p, k) {
				covered = true
				break
			}
		}
		if !covered {
			kept = append(kept, p)
		}
	}
	keys = make([]string, len(kept))
	for i, p := range kept {
		var ok bool
		if keys[i], ok = capability.FoldPath(p); !ok {
			return nil, nil, fmt.Errorf("gateway: protected path %q has a name a case-insensitive volume reads as nothing", p)
		}
	}
	return kept, keys, nil
}

// selfCheck refuses caps, under [RuleSelf], if one of them reads or writes
// one of aegis's own paths: an fs.read or fs.write of a protected path or
// of anything under it, an fs.write of a directory that holds one (a
// write, move or delete of a parent acts on its whole subtree: moving
// ~/.local/state moves the state directory with it), and a subtree fs.read
// of one (capability.Capability.Subtree: a tree or a search of ~ lists
// what is inside the state directory).
//
// A plain fs.read of a directory above a protected path is allowed:
// reading a directory lists it, which shows the names of its own entries
// and not what is inside them, and refusing it would refuse listing the
// home directory.
//
// The capabilities' paths are canonical (package capability: clean, links
// resolved for a local server, NFC), and so are the protected ones, in
// every form a server may reach them by (Options.Protected), so the
// comparison is component-wise on the strings. On a case-insensitive
// volume (fold) it is on fold keys (capability.FoldPath): every case
// variant the volume may read as a protected path is one.
func (e *Engine) selfCheck(caps []capability.Capability, fold bool) error {
	if len(e.protected) == 0 {
		return nil
	}
	for i := range caps {
		c := &caps[i]
		if c.Kind == capability.Exec {
			if err := e.selfExec(c); err != nil {
				return err
			}
			continue
		}
		if c.Kind != capability.FSRead && c.Kind != capability.FSWrite {
			continue
		}
		p, ok := capability.NormPath(c.Path)
		protected, under := e.protected, capability.PathUnder
		if ok && fold {
			// An ASCII path meets a key as it is (PathUnderFold).
			if !capability.IsASCII(p) {
				p, ok = capability.FoldPath(p)
			}
			protected, under = e.protectedKeys, capability.PathUnderFold
		}
		if !ok {
			return refusal(RuleSelf, "%s %s has no canonical spelling to compare with aegis's own paths", c.Kind, c.Path)
		}
		for j, pp := range protected {
			own := e.protected[j]
			if under(p, pp) {
				if len(p) == len(pp) {
					return refusal(RuleSelf, "%s %s is aegis's own (its configuration, policy, bindings or state), which no wrapped server may read or write", c.Kind, c.Path)
				}
				return refusal(RuleSelf, "%s %s is aegis's own (under %s: its configuration, policy, bindings or state), which no wrapped server may read or write", c.Kind, c.Path, own)
			}
			// A directory that holds a protected path, in the same
			// forms: a write, or a subtree read, acts on what it holds.
			if c.Kind == capability.FSWrite && under(pp, p) {
				return refusal(RuleSelf, "%s %s would reach %s, aegis's own (its configuration, policy, bindings or state), which no wrapped server may write", c.Kind, c.Path, own)
			}
			if c.Subtree && under(pp, p) {
				return refusal(RuleSelf, "%s %s and everything under it would reach %s, aegis's own (its configuration, policy, bindings or state), which no wrapped server may read", c.Kind, c.Path, own)
			}
		}
	}
	return nil
}

// selfExec refuses an exec of aegis itself (a model that can run `aegis
// approvals approve` answers its own questions; `aegis pins accept`
// accepts its own tool) and of a simple command that names one of aegis's
// paths, or a directory holding one, as an argument (`sqlite3
// ~/.local/state/aegis/approvals.db`, `mv ~/.local/state /tmp/s`, `tar cf
// x ~`), however the path is attached (`--target-directory=PATH`,
// `-tPATH`) and through links. A directory holding one is allowed to a
// program that only lists names (ls without -R, stat, df), as a listing
// is to fs.read. An arbitrary shell command is not read: a policy that
// allows one allows everything (docs/design/threat-model.md).
func (e *Engine) selfExec(c *capability.Capability) error {
	if c.Shell {
		return nil
	}
	if path.Base(c.Program) == "aegis" || slices.Contains(e.protected, path.Clean(c.Program)) {
		return refusal(RuleSelf, "exec %s runs aegis itself, which no wrapped server may (it could answer aegis's questions or accept its pins)", c.Program)
	}
	lister := listsOnly(c.Argv)
	for _, w := range c.Argv[min(1, len(c.Argv)):] {
		for _, p := range argPaths(w) {
			for _, pp := range e.protected {
				if capability.PathUnder(p, pp) {
					return refusal(RuleSelf, "exec %s names %s, which reaches aegis's own %s (its configuration, policy, bindings or state)", c.Program, w, pp)
				}
				if !lister && capability.PathUnder(pp, p) {
					return refusal(RuleSelf, "exec %s names %s, which holds aegis's own %s (its configuration, policy, bindings or state)", c.Program, w, pp)
				}
			}
		}
	}
	return nil
}

// argPaths returns the absolute paths a command-line word may name: the
// word, the value of --opt=PATH, the value glued to a short option
// (-tPATH), each clean, and each with its links resolved where it exists.
func argPaths(w string) []string {
	var cands []string
	if strings.HasPrefix(w, "/") {
		cands = append(cands, w)
	}
	if _, v, ok := strings.Cut(w, "="); ok && strings.HasPrefix(v, "/") {
		cands = append(cands, v)
	}
	if strings.HasPrefix(w, "-") {
		if i := strings.IndexByte(w, '/'); i > 0 {
			cands = append(cands, w[i:])
		}
	}
	out := make([]string, 0, 2*len(cands))
	for _, p := range cands {
		p = path.Clean(p)
		out = append(out, p)
		if r, err := filepath.EvalSymlinks(p); err == nil && r != p {
			out = append(out, r)
		} else if err != nil {
			// A path that does not exist yet (a destination) may still
			// be under a link: resolve its nearest existing parent.
			if r, err := filepath.EvalSymlinks(path.Dir(p)); err == nil && r != path.Dir(p) {
				out = append(out, path.Join(r, path.Base(p)))
			}
		}
	}
	return out
}

// listsOnly reports whether argv runs a program that only lists names or
// states (ls without -R, stat, df): a directory holding aegis's files may
// be its argument, as a listing may be fs.read's.
func listsOnly(argv []string) bool {
	if len(argv) == 0 {
		return false
	}
	switch path.Base(argv[0]) {
	case "stat", "df":
		return true
	case "ls":
		for _, a := range argv[1:] {
			if a == "--recursive" || strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "R") {
				return false
			}
		}
		return true
	}
	return false
}

// Protected returns the paths that no wrapped server may read or write,
// as the engine checks them ([RuleSelf]), sorted.
func (e *Engine) Protected() []string { return slices.Clone(e.protected) }
