package policy

import (
	"slices"
	"strings"

	"github.com/aegis-mcp/aegis/internal/capability"
)

// FileReach is the widest file access the policy could grant the tools of
// one server, whoever calls them: what a kernel sandbox around the server's
// process may grant it (DESIGN.md R29). Paths are absolute and clean, "~"
// expanded; each list is sorted, without duplicates and without a path
// below another of the same list.
type FileReach struct {
	// Read are the trees some allow or ask rule could let a call read:
	// the path_under of every capability rule for the server whose kinds
	// include fs.read, or "/" for such a rule with no path_under.
	Read []string
	// Write are the same for fs.write.
	Write []string
	// Masked are the trees a deny rule forbids reading to every call of
	// the server, whoever makes it: the path_under of deny rules whose
	// kinds include fs.read and that no call matcher (tool, method,
	// principal, role, origin, taint, tier, unbound) or condition narrows.
	// A sandbox hides them (an empty mount); trees the policy grants stay
	// granted only outside them.
	Masked []string
	// ReadOnly are the trees such a rule forbids writing but not reading.
	ReadOnly []string
	// Conditional are the path_under of deny rules for the server that a
	// call matcher or condition narrows: the policy still denies the calls
	// they match, but a mount cannot tell one call from another, so a
	// sandbox leaves them visible (a report says so).
	Conditional []string
}

// FileReach returns the widest file access any rule could grant the tools
// of server, as the union over every allow or ask rule that could apply to
// it, whatever the principal, roles, origin, taint and tier of the call and
// whatever a `when` condition says, in enforce or shadow mode.
//
// The sandbox holds one process for every tool of the server, bound or
// not, so the union covers both: an unbound tool derives no capabilities
// (the policy reasons about its calls by action alone), and its server
// gets the same trees as its bound siblings. To keep an unbound tool from
// every file, run it unbound (a second, empty sandbox).
//
// A deny rule that names fs.read or fs.write with no path_under, applied
// unconditionally, takes every grant of that kind away. Only deny rules in
// enforce mode mask: a shadow rule lets its calls through.
func (s *Set) FileReach(server string) FileReach {
	var fr FileReach
	var denyRead, denyWrite bool
	for _, r := range s.rules {
		if !r.kinds.has(capability.FSRead) && !r.kinds.has(capability.FSWrite) {
			continue
		}
		if len(r.servers) > 0 && !r.servers.match(server) {
			continue
		}
		paths := []string{"/"}
		if r.info.PathUnder != nil {
			paths = r.info.PathUnder
		}
		if r.effect != Deny {
			if r.kinds.has(capability.FSRead) {
				fr.Read = append(fr.Read, paths...)
			}
			if r.kinds.has(capability.FSWrite) {
				fr.Write = append(fr.Write, paths...)
			}
			continue
		}
		if r.shadow {
			continue
		}
		if !r.unconditional() {
			fr.Conditional = append(fr.Conditional, paths...)
			continue
		}
		switch {
		case r.kinds.has(capability.FSRead):
			fr.Masked = append(fr.Masked, paths...)
			denyRead = denyRead || r.info.PathUnder == nil
			denyWrite = denyWrite || r.info.PathUnder == nil && r.kinds.has(capability.FSWrite)
		default:
			fr.ReadOnly = append(fr.ReadOnly, paths...)
			denyWrite = denyWrite || r.info.PathUnder == nil
		}
	}
	if denyRead {
		fr.Read, fr.Masked = nil, slices.DeleteFunc(fr.Masked, func(p string) bool { return p == "/" })
	}
	if denyWrite {
		fr.Write, fr.ReadOnly = nil, slices.DeleteFunc(fr.ReadOnly, func(p string) bool { return p == "/" })
	}
	fr.Read, fr.Write = Trees(fr.Read), Trees(fr.Write)
	fr.Masked, fr.ReadOnly, fr.Conditional = Trees(fr.Masked), Trees(fr.ReadOnly), Trees(fr.Conditional)
	return fr
}

// unconditional reports whether the rule applies to every call of the
// servers it names: no call matcher narrows it, and it has no condition.
func (r *rule) unconditional() bool {
	return !r.unbound && r.tools == nil && r.prompts == nil && r.methods == nil &&
		r.principals == nil && r.roles == nil && r.origin == capability.OriginUnknown &&
		r.taint == 0 && r.tiers == 0 && r.when == nil
}

// Trees returns paths sorted, without duplicates and without a path that
// lies below another of them (component-wise: /a covers /a/b, not /ab).
func Trees(paths []string) []string {
	if len(paths) == 0 {
		return nil
	}
	ps := slices.Clone(paths)
	slices.Sort(ps)
	ps = slices.Compact(ps)
	out := ps[:0]
	for _, p := range ps {
		if slices.ContainsFunc(out, func(dir string) bool { return under(p, dir) }) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// under reports whether p is dir or lies below it.
func under(p, dir string) bool {
	if dir == "/" {
		return true
	}
	return p == dir || strings.HasPrefix(p, dir) && p[len(dir)] == '/'
}
