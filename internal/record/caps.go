package record

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/aegis-mcp/aegis/internal/capability"
)

// This file is the one conversion between a recorded capability and a
// capability.Capability, both ways: what the gateway records and what
// recheck decides on again must not drift apart.

// CapsOf converts capabilities to their recorded form.
func CapsOf(caps []capability.Capability) []Cap {
	out := make([]Cap, len(caps))
	for i, c := range caps {
		out[i] = Cap{
			Kind: c.Kind.String(), Path: c.Path, Subtree: c.Subtree,
			Scheme: c.Scheme, Host: c.Host, Port: c.Port, URL: c.URL,
			Program: c.Program, Argv: c.Argv, Shell: c.Shell, Command: c.Command,
			IDKind: c.IDKind, ID: c.ID, Unproven: c.Unproven,
		}
	}
	return out
}

// AppendCapabilities converts recorded capabilities back to capability
// values, appended to dst, recomputing what the record does not store (a
// host's address and classes) the way derivation computed it. It fails on
// an unknown kind or a host that is not canonical. It allocates nothing
// when dst has room.
func AppendCapabilities(dst []capability.Capability, cs []Cap) ([]capability.Capability, error) {
	for i := range cs {
		c := &cs[i]
		k, err := capability.ParseKind(c.Kind)
		if err != nil {
			return nil, err
		}
		dst = append(dst, capability.Capability{
			Kind: k, Path: c.Path, Subtree: c.Subtree,
			Scheme: c.Scheme, Host: c.Host, Port: c.Port, URL: c.URL,
			Program: c.Program, Argv: c.Argv, Shell: c.Shell, Command: c.Command,
			IDKind: c.IDKind, ID: c.ID, Unproven: c.Unproven,
		})
		if k == capability.NetConnect || k == capability.NetLink {
			host, addr, classes, err := capability.CanonHostClasses(c.Host)
			if err != nil || host != c.Host {
				return nil, fmt.Errorf("recorded host %q is not canonical", c.Host)
			}
			if addr.IsValid() {
				classes = capability.ClassOf(addr)
			}
			dst[len(dst)-1].Addr, dst[len(dst)-1].Classes = addr, classes
		}
	}
	return dst, nil
}

// Text is the capability as a person reads it: "fs.write /home/a/x",
// "net.connect https://h:443/ (host h, port 443)", "exec git status".
func (c *Cap) Text() string {
	switch {
	case c.Path != "" && c.Subtree:
		return c.Kind + " " + c.Path + " and everything under it"
	case c.Path != "":
		return c.Kind + " " + c.Path
	case c.Host != "":
		s := c.Kind + " "
		if c.URL != "" {
			s += c.URL
		} else {
			s += c.Host
		}
		return s + " (host " + c.Host + ", port " + strconv.Itoa(int(c.Port)) + ")"
	case c.Shell:
		return c.Kind + " arbitrary shell: " + c.Command
	case c.Program != "":
		return c.Kind + " " + strings.Join(c.Argv, " ")
	case c.ID != "" && c.Unproven:
		return c.Kind + " " + c.IDKind + " " + c.ID + " (unproven: not among the server's own results)"
	case c.ID != "":
		return c.Kind + " " + c.IDKind + " " + c.ID
	}
	return c.Kind
}
