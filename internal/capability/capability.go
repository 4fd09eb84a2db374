// Package capability owns what a tool call can do, expressed as values a
// policy can match: the kinds (fs.read, fs.write, net.connect, exec, id), the
// Capability value, and the canonical forms of the resources they name —
// paths, URLs, hosts, addresses and command lines.
//
// Everything here is pure: no file system, no DNS. Where canonicalisation
// needs the outside world (symbolic links of a local server), the caller
// passes the function that asks it. Every canonicaliser fails closed: an input
// that is ambiguous, relative, or parsed differently by two reasonable
// parsers is an error, never a best guess.
package capability

import (
	"fmt"
	"net/netip"
)

// Kind is the kind of a derived capability.
type Kind uint8

// The capability kinds (DESIGN.md R1). The zero Kind is invalid.
const (
	FSRead     Kind = iota + 1 // read a file or list a directory
	FSWrite                    // create, modify, delete or move a file or directory
	NetConnect                 // open a connection to scheme://host:port
	Exec                       // run a program
	ID                         // name an object of the server, for provenance
	// NetLink is a link written into free text (a message's body): the
	// server connects nowhere, but whoever reads the text may follow it.
	// It has the fields of a NetConnect.
	NetLink
)

var kindNames = [...]string{FSRead: "fs.read", FSWrite: "fs.write", NetConnect: "net.connect", Exec: "exec", ID: "id", NetLink: "net.link"}

// String returns the kind's name as written in policies and bindings.
func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// ParseKind returns the kind named s ("fs.read", "net.connect", ...).
func ParseKind(s string) (Kind, error) {
	for k, name := range kindNames {
		if name != "" && name == s {
			return Kind(k), nil
		}
	}
	return 0, fmt.Errorf("unknown capability kind %q (want fs.read, fs.write, net.connect, net.link, exec or id)", s)
}

// Capability is one thing a call would do, in canonical form. Only the fields
// of its Kind are set.
type Capability struct {
	Kind Kind

	// Path is the absolute, clean path of an fs.read or fs.write, with
	// symbolic links resolved where the server is local.
	Path string
	// Subtree says the fs.read or fs.write acts on Path and on everything
	// under it: a move or delete of a directory, a recursive listing or
	// search. The policy allows it only if it would allow the kind on
	// every path under Path (package policy).
	Subtree bool

	// Scheme, Host, Port and URL describe a net.connect. Scheme is empty
	// when the argument named a bare host. Host is the canonical host: a
	// lower-case ASCII (A-label) name without a trailing dot, or the text
	// form of Addr. Port is the explicit port or the scheme's default; 0
	// when neither is known. URL is the canonical serialisation of the URL
	// argument, empty for a bare host.
	Scheme string
	Host   string
	Port   uint16
	URL    string
	// Addr is the address when Host is an IP literal, in any spelling the
	// runtime accepts (decimal, hex, octal, short IPv4, bracketed IPv6); an
	// IPv4-mapped IPv6 address is unmapped.
	Addr netip.Addr
	// Classes are the address and name classes of the host, including those
	// of an IPv4 address embedded in an IPv6 one.
	Classes Class

	// Program and Argv describe an exec of a simple command: no shell
	// syntax, so Argv[0] == Program and the words are exactly the argv the
	// program receives. Shell is set instead when the command line uses
	// shell syntax (pipes, substitutions, redirections, lists, expansions):
	// it can do anything, and only a rule naming arbitrary shell allows it.
	Program string
	Argv    []string
	Shell   bool
	// Command is the command line as written, for shell capabilities.
	Command string

	// IDKind and ID describe an id: the kind of object (e.g. mail.message)
	// and the id, trimmed of surrounding space.
	IDKind string
	ID     string
	// Unproven marks an id that the server did not return in this
	// session, for an argument whose binding says provenance: flag (R16):
	// the policy decides what an unproven id does (typically ask: a new
	// payee looks the same whether the user or an attacker chose it). An
	// id bound with provenance required is refused instead.
	Unproven bool
}

// Tier is the risk tier of a tool's action, set by its confirmed binding and
// never by the tool's name (DESIGN.md R20).
type Tier uint8

// The risk tiers. The zero Tier is unknown and is treated as Mutating.
const (
	TierUnknown  Tier = iota
	TierReadOnly      // reads nothing private: listing configuration, the time
	TierDataRead      // reads user or client data
	TierMutating      // changes state or sends data out
)

var tierNames = [...]string{TierUnknown: "unknown", TierReadOnly: "read-only", TierDataRead: "data-read", TierMutating: "mutating"}

// String returns the tier's name as written in bindings.
func (t Tier) String() string {
	if int(t) < len(tierNames) {
		return tierNames[t]
	}
	return fmt.Sprintf("tier(%d)", uint8(t))
}

// ParseTier returns the tier named s.
func ParseTier(s string) (Tier, error) {
	for t, name := range tierNames {
		if t != 0 && name == s {
			return Tier(t), nil
		}
	}
	return 0, fmt.Errorf("unknown risk tier %q (want read-only, data-read or mutating)", s)
}
