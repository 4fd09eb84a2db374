package policy

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/aegis-mcp/aegis/internal/capability"
	"github.com/aegis-mcp/aegis/internal/strictyaml"
)

// Options configures Parse. The zero value works.
type Options struct {
	// Home is what "~" in path_under means: the home directory of the user
	// whose files the policy protects, an absolute path. Empty: a
	// path_under that starts with "~" is an error.
	Home string
	// Resolve, when set, returns a path_under pattern with its symbolic
	// links resolved: the form the capabilities of a local server take,
	// since their links are resolved too. A rule then matches under both
	// the pattern and its resolved form (a deny on /tmp/x must match
	// /private/tmp/x where /tmp is a link). An error keeps the pattern
	// alone. Nil: patterns are lexical only.
	Resolve func(dir string) (string, error)
	// Sets are the named sets of trusted values rules may name with
	// id_in. The contents of those a rule names are part of the policy's
	// hash.
	Sets map[string]*ValueSet
}

// Set is a compiled policy. It is immutable and safe for concurrent use.
type Set struct {
	file  string
	mode  Mode
	hash  [32]byte
	infos []*Rule
	rules []*rule
	idx   index
}

// hashDomain separates the policy hash from every other SHA-256 aegis
// computes.
const hashDomain = "aegis policy v1\x00"

// maxIDLen bounds a rule ID: IDs go into every chain entry.
const maxIDLen = 128

// Parse compiles the policy file data; file names it in errors and
// reasons. The error, if any, is a [strictyaml.Errors]: each problem as
// file:line:col: message, at most [strictyaml.MaxErrors] of them.
func Parse(file string, data []byte, o *Options) (*Set, error) {
	if o == nil {
		o = &Options{}
	}
	var spec fileSpec
	if err := strictyaml.Decode(file, data, &spec); err != nil {
		return nil, err
	}
	c := compiler{file: file, home: o.Home, resolve: o.Resolve, sets: o.Sets, ids: map[string]int{}}
	s := &Set{file: file}
	if spec.Version.value != "1" || spec.Version.tag != "!!int" {
		c.errorf(spec.Version.pos, "unsupported policy version %q; want 1", spec.Version.value)
	}
	if spec.Mode.set {
		m, ok := parseMode(spec.Mode.value)
		if !ok {
			c.errorf(spec.Mode.pos, "bad mode %q: want enforce or shadow", spec.Mode.value)
		}
		s.mode = m
	}
	for i := range spec.Rules {
		if r := c.rule(i, &spec.Rules[i], s.mode == Shadow); r != nil {
			s.rules = append(s.rules, r)
			s.infos = append(s.infos, r.info)
		}
		if c.errs.Full() {
			break
		}
	}
	if err := c.errs.Err(); err != nil {
		return nil, err
	}
	h := sha256.New()
	h.Write([]byte(hashDomain))
	h.Write(data)
	// The sets the rules name decide as the rules do: a value added to
	// one changes the policy. (A policy that names none hashes as ever.)
	for _, name := range c.usedSets() {
		h.Write([]byte("\x00set\x00" + name + "\x00"))
		d := c.sets[name].digest
		h.Write(d[:])
	}
	h.Sum(s.hash[:0])
	// Keep the rules side by side in memory: Decide reads a few fields of
	// each candidate.
	packed := make([]rule, len(s.rules))
	for i, r := range s.rules {
		packed[i] = *r
		s.rules[i] = &packed[i]
	}
	s.idx = buildIndex(s.rules)
	return s, nil
}

// Mode returns the mode of the whole policy. In a shadow policy every rule
// is shadow: nothing is enforced, so every Decision's Effect is Deny, and
// its Would is what the policy says. The gateway decides what a shadow
// policy lets through (DESIGN.md R9: everything, recording Would).
func (s *Set) Mode() Mode { return s.mode }

// Hash returns SHA-256 over the policy file's bytes, domain-separated: the
// policy hash of chain entries.
func (s *Set) Hash() [32]byte { return s.hash }

// Rules returns the rules in file order.
func (s *Set) Rules() []*Rule { return append([]*Rule(nil), s.infos...) }

// File returns the file name the policy was parsed as.
func (s *Set) File() string { return s.file }

type compiler struct {
	file    string
	home    string
	resolve func(string) (string, error)
	ids     map[string]int // rule ID → line of its first use
	errs    strictyaml.List
	sets    map[string]*ValueSet
	used    map[string]bool // the sets rules name
}

// usedSets returns the names of the sets rules name, sorted.
func (c *compiler) usedSets() []string {
	out := make([]string, 0, len(c.used))
	for n := range c.used {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func (c *compiler) errorf(p strictyaml.Pos, format string, args ...any) {
	c.errs.AddError(strictyaml.ErrorAt(p, format, args...))
}

// rule compiles one rule, or returns nil after reporting its errors.
func (c *compiler) rule(i int, rs *ruleSpec, shadowPolicy bool) *rule {
	before := c.errs.Len()
	info := &Rule{ID: rs.ID.value, Reason: rs.Reason.value, File: c.file, Line: rs.Pos.Line, Col: rs.Pos.Col}
	r := &rule{info: info, index: int32(i)}

	c.id(rs.ID)
	if e, ok := parseEffect(rs.Effect.value); ok {
		r.effect = e
	} else {
		c.errorf(rs.Effect.pos, "bad effect %q: want allow, deny or ask", rs.Effect.value)
	}
	if rs.Mode.set {
		m, ok := parseMode(rs.Mode.value)
		if !ok {
			c.errorf(rs.Mode.pos, "bad mode %q: want enforce or shadow", rs.Mode.value)
		}
		r.shadow = m == Shadow
	}
	r.shadow = r.shadow || shadowPolicy

	r.servers = c.globs("server", rs.Server, false)
	r.methods = c.globs("method", rs.Method, false)
	r.tools = c.globs("tool", rs.Tool, false)
	r.prompts = c.globs("prompt", rs.Prompt, false)
	switch {
	case rs.Tool.set && rs.Prompt.set:
		c.errorf(rs.Prompt.pos, "a rule cannot have both tool and prompt: tool matches tools/call, prompt matches prompts/get")
	case rs.Tool.set && rs.Method.set && !r.methods.match(ToolsCall):
		c.errorf(rs.Tool.pos, "tool matches tools/call only, which the rule's method matcher does not allow")
	case rs.Prompt.set && rs.Method.set && !r.methods.match(PromptsGet):
		c.errorf(rs.Prompt.pos, "prompt matches prompts/get only, which the rule's method matcher does not allow")
	}
	r.principals = c.names("principal", rs.Principal)
	r.roles = c.names("role", rs.Role)
	if rs.Origin.set {
		o, ok := capability.ParseOrigin(rs.Origin.value)
		if !ok {
			c.errorf(rs.Origin.pos, "bad origin %q: want interactive or unattended", rs.Origin.value)
		}
		r.origin = o
	}
	if rs.Taint.set {
		if c.boolean("taint", rs.Taint) {
			r.taint = 2
		} else {
			r.taint = 1
		}
	}
	for _, t := range rs.Tier.items {
		tier, err := capability.ParseTier(t.value)
		if err != nil {
			c.errorf(t.pos, "%v", err)
			continue
		}
		r.tiers |= 1 << tier
	}
	if rs.Unbound.set {
		r.unbound = c.boolean("unbound", rs.Unbound)
	}

	r.kinds = c.kinds(rs)
	for _, p := range rs.PathUnder.items {
		dir, ok := c.pathUnder(p)
		if !ok {
			continue
		}
		dirs := []string{dir}
		if c.resolve != nil {
			// Links are resolved by the bytes written, which name
			// what is on disk; the forms matched come after.
			if rd, err := c.resolve(dir); err == nil && rd != dir && strings.HasPrefix(rd, "/") && path.Clean(rd) == rd {
				dirs = append(dirs, rd)
			}
		}
		for _, d := range dirs {
			n, ok := capability.NormPath(d)
			key, foldOK := capability.FoldPath(n)
			if !ok || !foldOK {
				c.errorf(p.pos, "bad path_under %q: %s has a name that is no text, or only characters a case-insensitive volume ignores", p.value, d)
				break
			}
			if !slices.Contains(r.paths, n) {
				r.paths = append(r.paths, n)
			}
			if !slices.Contains(r.foldPaths, key) {
				r.foldPaths = append(r.foldPaths, key)
			}
		}
	}
	for _, h := range rs.Host.items {
		if err := r.hosts.add(h.value); err != nil {
			c.errorf(h.pos, "%v", err)
		}
	}
	r.hasHosts = rs.Host.set
	for _, p := range rs.Port.items {
		pr, err := parsePort(p)
		if err != nil {
			c.errorf(p.pos, "%v", err)
			continue
		}
		r.ports = append(r.ports, pr)
	}
	for _, sc := range rs.Scheme.items {
		v := strings.ToLower(sc.value)
		if err := validScheme(v); err != nil {
			c.errorf(sc.pos, "%v", err)
			continue
		}
		r.schemes = append(r.schemes, v)
	}
	r.programs = c.globs("program", rs.Program, true)
	if rs.Shell.set {
		r.shell = c.boolean("shell", rs.Shell)
	}
	r.idKinds = c.names("id_kind", rs.IDKind)
	for _, it := range rs.IDIn.items {
		vs := c.sets[it.value]
		if vs == nil {
			c.errorf(it.pos, "id_in %q: %v (the configuration's sets: %s)", it.value, errNoSet, strings.Join(sortedSetNames(c.sets), ", "))
			continue
		}
		if c.used == nil {
			c.used = map[string]bool{}
		}
		c.used[it.value] = true
		r.idIn = append(r.idIn, vs)
	}
	if rs.Unproven.set {
		r.unproven = c.boolean("unproven", rs.Unproven)
	}
	if rs.When.set {
		cond, err := compileCondition(rs.When.value)
		if err != nil {
			c.errorf(rs.When.pos, "%v", err)
		} else {
			r.when = cond
			info.When = cond.text
		}
	}
	if r.unbound && r.kinds != 0 {
		c.errorf(rs.Unbound.pos, "unbound: true cannot be combined with capability matchers: an unbound tool has no capabilities")
	}

	if c.errs.Len() > before {
		return nil
	}
	r.mask = r.callMask()
	if len(r.roles) == 1 && len(r.roles[0]) <= 16 {
		r.role = keyOf(r.roles[0]) // checked by evaluator.hasRole (needRole)
	}
	r.prec = precedence(r.effect, r.index)
	info.Effect = r.effect
	if r.shadow {
		info.Mode = Shadow
	}
	info.Unbound = r.unbound
	info.PathUnder = slices.Clone(r.paths) // a copy: changing a Rule changes no decision
	for k := capability.FSRead; k <= capability.NetLink; k++ {
		if r.kinds.has(k) {
			info.Kinds = append(info.Kinds, k)
		}
	}
	return r
}

func (c *compiler) id(s scalar) {
	switch {
	case s.value == "":
		c.errorf(s.pos, "empty rule id")
		return
	case len(s.value) > maxIDLen:
		c.errorf(s.pos, "rule id of %d bytes is too long (at most %d)", len(s.value), maxIDLen)
		return
	}
	for _, r := range s.value {
		if !(unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("._:/-", r)) {
			c.errorf(s.pos, "bad rule id %q: want letters, digits and . _ : / -", s.value)
			return
		}
	}
	if strings.HasPrefix(s.value, "aegis:") {
		// aegis records its own refusals (an unreadable argument, say)
		// under aegis: ids; a policy rule must not be mistaken for one.
		c.errorf(s.pos, "rule id %q: ids starting with \"aegis:\" are reserved for aegis's own rules", s.value)
		return
	}
	if first, dup := c.ids[s.value]; dup {
		c.errorf(s.pos, "duplicate rule id %q (first at line %d)", s.value, first)
		return
	}
	c.ids[s.value] = s.pos.Line
}

func (c *compiler) boolean(key string, s scalar) bool {
	v, ok := s.boolean()
	if !ok {
		c.errorf(s.pos, "bad %s %q: want true or false", key, s.value)
	}
	return v
}

func (c *compiler) globs(key string, list scalars, slash bool) globs {
	if !list.set {
		return nil
	}
	gs := make(globs, 0, len(list.items))
	for _, it := range list.items {
		g, err := compileGlob(it.value, slash)
		if err != nil {
			c.errorf(it.pos, "bad %s pattern %q: %v", key, it.value, err)
			continue
		}
		gs = append(gs, g)
	}
	return gs
}

func (c *compiler) names(key string, list scalars) []string {
	if !list.set {
		return nil
	}
	out := make([]string, 0, len(list.items))
	for _, it := range list.items {
		if it.value == "" || !utf8.ValidString(it.value) {
			c.errorf(it.pos, "bad %s %q: want a non-empty name", key, it.value)
			continue
		}
		out = append(out, it.value)
	}
	return out
}

func (c *compiler) pathUnder(p scalar) (string, bool) {
	v := p.value
	switch {
	case strings.HasPrefix(v, "~") && c.home == "":
		c.errorf(p.pos, "path_under %q uses \"~\" but no home directory is set (Options.Home)", v)
		return "", false
	case !strings.HasPrefix(v, "/") && !strings.HasPrefix(v, "~"):
		c.errorf(p.pos, "path_under %q is relative: want an absolute path or one starting with \"~/\"", v)
		return "", false
	}
	dir, err := canonPattern(v, c.home)
	if err != nil {
		c.errorf(p.pos, "bad path_under %q: %v", v, err)
		return "", false
	}
	return dir, true
}

// canonPattern returns the canonical form of a path_under pattern: "~"
// expanded, then cleaned lexically. It keeps the bytes written (the caller
// resolves links by them, then puts the result in NFC). Patterns are written by whoever writes
// the policy and name no file of their own, so unlike capability.CanonPath
// it resolves no links and accepts the process directories (/proc): a rule
// may well deny them.
func canonPattern(p, home string) (string, error) {
	switch {
	case strings.IndexByte(p, 0) >= 0:
		return "", errors.New("contains a NUL byte")
	case !utf8.ValidString(p):
		return "", errors.New("not valid UTF-8")
	case len(p) > 4096:
		return "", errors.New("longer than 4096 bytes")
	}
	if p == "~" || strings.HasPrefix(p, "~/") {
		if !strings.HasPrefix(home, "/") {
			return "", fmt.Errorf("home directory %q is not absolute", home)
		}
		p = home + p[1:]
	} else if p[0] == '~' {
		return "", errors.New(`"~user" is not supported; write the path`)
	}
	return path.Clean(p), nil
}

// matcher families: the capability kinds each capability matcher applies to.
type family struct {
	key   string
	set   bool
	kinds kindSet
	pos   strictyaml.Pos
}

// kinds returns the capability kinds of a rule (zero for an action rule)
// and reports matchers that cannot apply to them.
func (c *compiler) kinds(rs *ruleSpec) kindSet {
	fams := []family{
		{"path_under", rs.PathUnder.set, fsKinds, rs.PathUnder.pos},
		{"host", rs.Host.set, hostKinds, rs.Host.pos},
		{"port", rs.Port.set, hostKinds, rs.Port.pos},
		{"scheme", rs.Scheme.set, hostKinds, rs.Scheme.pos},
		{"program", rs.Program.set, execKinds, rs.Program.pos},
		{"shell", rs.Shell.set, execKinds, rs.Shell.pos},
		{"id_kind", rs.IDKind.set, idKinds, rs.IDKind.pos},
		{"unproven", rs.Unproven.set, idKinds, rs.Unproven.pos},
		{"id_in", rs.IDIn.set, idKinds, rs.IDIn.pos},
	}
	if rs.Capability.set {
		var ks kindSet
		for _, it := range rs.Capability.items {
			k, err := capability.ParseKind(it.value)
			if err != nil {
				c.errorf(it.pos, "%v", err)
				continue
			}
			ks |= 1 << k
		}
		for _, f := range fams {
			if f.set && ks&^f.kinds != 0 {
				c.errorf(f.pos, "%s does not apply to %s (it applies to %s)", f.key, kindNames(ks&^f.kinds), kindNames(f.kinds))
			}
		}
		return ks
	}
	ks := allKinds
	var first *family
	for i, f := range fams {
		if !f.set {
			continue
		}
		if first != nil && f.kinds != first.kinds {
			c.errorf(f.pos, "%s (for %s) cannot be combined with %s (for %s) in one rule", f.key, kindNames(f.kinds), first.key, kindNames(first.kinds))
			continue
		}
		if first == nil {
			first = &fams[i]
		}
		ks &= f.kinds
	}
	if first == nil {
		return 0
	}
	return ks
}

func kindNames(ks kindSet) string {
	var names []string
	for k := capability.FSRead; k <= capability.NetLink; k++ {
		if ks.has(k) {
			names = append(names, k.String())
		}
	}
	switch len(names) {
	case 0:
		return "nothing"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
