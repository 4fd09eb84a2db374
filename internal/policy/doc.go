// Package policy owns aegis's policy: the YAML rules, their compilation
// into an indexed [Set], and the decision on one call, [Set.Decide]
// (DESIGN.md R7–R10). It speaks only of tools, principals and derived
// capabilities; deriving and canonicalising capabilities is package
// capability's, and what a decision leads to (asking a human, recording it,
// letting a shadow policy through) is the gateway's. It does no I/O.
//
// # The file
//
//	version: 1
//	mode: enforce              # enforce (default) | shadow
//	rules:
//	  - id: no-ssh             # required, unique
//	    effect: deny           # allow | deny | ask (required)
//	    reason: "SSH keys are off limits"
//	    path_under: ["~/.ssh"]
//
//	  - id: team-a-projects
//	    effect: allow
//	    role: [team-a]
//	    capability: [fs.read, fs.write]
//	    path_under: [/srv/projects/team-a]
//
//	  - id: fs-tools
//	    effect: allow
//	    server: [fs]
//	    tool: ["read_*", write_file]
//
//	  - id: github
//	    effect: allow
//	    host: [api.github.com, "*.githubusercontent.com"]
//	    port: [443]
//	    scheme: [https]
//
//	  - id: no-dotenv
//	    effect: deny
//	    capability: [fs.read]
//	    when: 'cap.path.endsWith(".env")'
//
// A rule has an id, an effect, an optional reason shown to the model and
// the user, an optional mode (enforce | shadow), and matchers. Every matcher
// is optional; a matcher given a list matches any of its values; a rule
// matches when all its matchers do. An empty list is an error.
//
// Call matchers: server and tool (globs: `*` any run of characters, `?` one,
// `\` escapes), principal and role (exact; role matches if any of the
// call's roles is listed), origin (interactive | unattended), taint (true |
// false), tier (read-only | data-read | mutating: the risk tier of the
// tool's binding; an unknown tier matches as mutating) and unbound.
//
// Capability matchers: capability (kinds: fs.read, fs.write, net.connect,
// exec, id); path_under (fs: the path or anything below it, component-wise;
// "~" expands against [Options.Home]); host (net.connect: an exact name or
// address, "*.suffix" for strict subdomains, a CIDR network that matches
// addresses only, or "class:NAME" for an address class such as
// class:private or class:metadata); port (numbers and ranges such as
// "8000-8100"); scheme; program (exec: the program as written, or a glob
// whose `*` does not cross "/"); shell (exec: also match arbitrary shell
// command lines); id_kind (id). A rule with any of them is a capability
// rule; without `capability`, its kinds are implied (path_under: fs.read
// and fs.write; host, port, scheme: net.connect; program, shell: exec;
// id_kind: id). A matcher that cannot apply to the rule's kinds is an
// error.
//
// when is a CEL condition over `call` (server, tool, principal, roles,
// origin, taint, tier) and `cap` (kind, path, scheme, host, port, url,
// program, argv, shell, id_kind, id; empty for an action rule), type-checked
// when the policy is parsed.
//
// # Decisions
//
// A call is allowed only if its action is allowed and every capability it
// derives is allowed (R8): an allowed action does not authorise its
// arguments. The action is decided by the action rules that match the
// call; each capability by the capability rules whose call matchers and
// capability matchers both match. For each, deny beats ask beats allow,
// the first rule in the file of the winning effect is the deciding rule,
// and nothing matching denies. The call is denied if the action or any
// capability is denied, else asks if any asks, else is allowed.
//
// Missing information never widens a permission and never narrows a
// denial:
//   - An unbound tool (no confirmed binding) is reached by allow and ask
//     rules only if they say `unbound: true`, which only such tools match;
//     deny rules reach bound and unbound tools alike.
//   - An exec capability that is arbitrary shell is matched only by rules
//     with `shell: true`, and by deny rules about exec that name no
//     program and no shell.
//   - A matcher on a value the call lacks (an unknown origin, port or
//     scheme) fails for allow and ask rules and holds for deny rules; a
//     deny rule's CIDR also matches the IPv4 address embedded in an IPv6
//     one, and its program name without a "/" also matches the base name
//     of a program given by path.
//   - A condition that fails to evaluate (an error, the cost limit) makes a
//     deny or ask rule match and an allow rule not match.
//   - A capability that is not canonical is denied outright.
//
// A shadow rule, or every rule of a shadow policy, never changes the
// decision: [Decision.Would] is the decision with shadow rules enforced,
// and [Decision.ShadowReason] names the rule that would change it.
//
// # Speed
//
// Parse indexes the rules: action rules by tool name, capability rules by
// kind and then by a trie of path components, host names and suffixes,
// programs and id kinds. Decide evaluates only the candidates and allocates
// nothing for a call of up to four capabilities unless a condition runs.
package policy
