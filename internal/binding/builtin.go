package binding

import (
	"fmt"
	"sort"

	"github.com/aegis-mcp/aegis/internal/args"
	"github.com/aegis-mcp/aegis/internal/capability"
)

// Semantics records how a server itself reads its path arguments, so that a
// curated binding can model it or fail closed where it cannot. Symbolic
// links need no entry: the kernel follows them for every server, so a
// server configured as local always has them resolved.
type Semantics struct {
	// ExpandHome: the server expands "~" and "~/x" against its own user's
	// home (the official filesystem server does, with os.homedir()).
	ExpandHome bool
	// NFCEquivalent: the server maps a missing path component to an existing
	// sibling with the same Unicode NFC form. aegis cannot see which sibling
	// exists, so a path argument not in NFC is refused as ambiguous.
	NFCEquivalent bool
	// ArgDirs: the server takes its allowed directories as command-line
	// arguments (those after ArgDirsAfter, its package or entry point),
	// and resolves a relative path against them
	// (capability.PathOptions.Bases) until the client's roots replace
	// them.
	ArgDirs      bool
	ArgDirsAfter string
}

// Builtin is a curated binding table compiled into aegis for a well-known
// server.
type Builtin struct {
	Name        string // the name a config uses: builtin: filesystem
	Package     string // where the server comes from
	Description string
	Semantics   Semantics
	Tools       Table
	// Prompts binds the arguments of the server's prompts, by prompt
	// name: a prompt that runs a command or reads a file acts as a tool.
	Prompts Table
}

// Builtins returns the curated tables, by name. Each call returns fresh
// values: callers may not share and mutate them.
func Builtins() map[string]*Builtin {
	m := make(map[string]*Builtin)
	for _, b := range []*Builtin{filesystemBuiltin(), fetchBuiltin(), npxFetchBuiltin(), commandsBuiltin(), gitBuiltin(), memoryBuiltin()} {
		m[b.Name] = b
	}
	return m
}

// BuiltinNames lists the names of the curated tables, sorted.
func BuiltinNames() []string {
	var names []string
	for name := range Builtins() {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// curatedArg builds an argument of a curated table; the pointers are
// constants, so a bad one is a programming error.
func curatedArg(ptr string, kind capability.Kind, form Form) Arg {
	p, err := args.ParsePointer(ptr)
	if err != nil {
		panic(fmt.Sprintf("binding: curated pointer %q: %v", ptr, err))
	}
	return Arg{Pointer: p, Kind: kind, Form: form}
}

func table(bs ...*Binding) Table {
	t := make(Table, len(bs))
	for _, b := range bs {
		t[b.Tool] = b
	}
	return t
}

// filesystemBuiltin models @modelcontextprotocol/server-filesystem
// (2026.8.31): every tool it lists, with every capability its effect has
// (an edit reads and writes; a move reads what it carries), and each
// argument the tool acts on recursively marked Subtree (a move, a tree, a
// search). The server expands "~" with its own
// HOME, resolves a relative path against its allowed directories (its
// command-line arguments, which `aegis run` sees; Semantics.ArgDirs), follows symbolic links for
// reads and writes, and matches missing components NFC-equivalently.
func filesystemBuiltin() *Builtin {
	r := func(ptr string) Arg { return curatedArg(ptr, capability.FSRead, FormPath) }
	w := func(ptr string) Arg { return curatedArg(ptr, capability.FSWrite, FormPath) }
	// rt and wt bind a path the tool acts on with everything under it.
	rt := func(ptr string) Arg { a := r(ptr); a.Subtree = true; return a }
	wt := func(ptr string) Arg { a := w(ptr); a.Subtree = true; return a }
	const (
		ro = capability.TierReadOnly
		dr = capability.TierDataRead
		mu = capability.TierMutating
	)
	return &Builtin{
		Name:        "filesystem",
		Package:     "@modelcontextprotocol/server-filesystem",
		Description: "the official MCP filesystem server",
		Semantics:   Semantics{ExpandHome: true, NFCEquivalent: true, ArgDirs: true, ArgDirsAfter: "server-filesystem"},
		Tools: table(
			&Binding{Tool: "read_file", Tier: dr, Args: []Arg{r("/path")}},
			&Binding{Tool: "read_text_file", Tier: dr, Args: []Arg{r("/path")}},
			&Binding{Tool: "read_media_file", Tier: dr, Args: []Arg{r("/path")}},
			&Binding{Tool: "read_multiple_files", Tier: dr, Args: []Arg{r("/paths/*")}},
			&Binding{Tool: "write_file", Tier: mu, Args: []Arg{w("/path")}},
			// edit_file writes even with dryRun: aegis does not trust a flag
			// the model sets to make a write harmless. It reads too: its
			// answer is a diff holding the file's lines around each edit
			// (all a dry run is for), so a grant to write is not enough.
			&Binding{Tool: "edit_file", Tier: mu, Args: []Arg{r("/path"), w("/path")}},
			&Binding{Tool: "create_directory", Tier: mu, Args: []Arg{w("/path")}},
			// A listing reads the directory itself: the names of its own
			// entries (and, with sizes, their sizes), never what is inside
			// a child directory, which needs a read of that child. So it
			// is no subtree read: a deny rule on ~/.ssh does not refuse
			// listing ~, which would refuse listing any home.
			&Binding{Tool: "list_directory", Tier: dr, Args: []Arg{r("/path")}},
			&Binding{Tool: "list_directory_with_sizes", Tier: dr, Args: []Arg{r("/path")}},
			// A tree lists every directory under the path, and a search
			// every name under it: each reads the whole subtree's names.
			// Their excludePatterns are the model's to set, so aegis does
			// not count on them to leave a denied folder out.
			&Binding{Tool: "directory_tree", Tier: dr, Args: []Arg{rt("/path")}},
			// A move deletes the source and writes the destination; and it
			// reads the source, whose content it carries to the destination,
			// where another grant may let the model read it. A directory
			// moves with everything under it, so both ends are subtrees:
			// the source's contents leave, and arrive under the destination.
			&Binding{Tool: "move_file", Tier: mu, Args: []Arg{rt("/source"), wt("/source"), wt("/destination")}},
			&Binding{Tool: "search_files", Tier: dr, Args: []Arg{rt("/path")}},
			&Binding{Tool: "get_file_info", Tier: dr, Args: []Arg{r("/path")}},
			&Binding{Tool: "list_allowed_directories", Tier: ro},
		),
	}
}

// npxFetchBuiltin models @tokenizin/mcp-npx-fetch, a URL-fetching server
// on npm: each of its four tools connects to the URL it is given (and
// sends the headers the model chose, which DLP reads as it reads every
// argument). It follows redirects itself: under the sandbox each is a new
// connection, decided at the egress proxy.
func npxFetchBuiltin() *Builtin {
	url := func(tool string) *Binding {
		return &Binding{Tool: tool, Tier: capability.TierDataRead, Args: []Arg{
			curatedArg("/url", capability.NetConnect, FormURL),
		}}
	}
	return &Builtin{
		Name:        "npx-fetch",
		Package:     "@tokenizin/mcp-npx-fetch",
		Description: "a URL-fetching server on npm (tools fetch_html, fetch_markdown, fetch_txt, fetch_json, argument url)",
		Tools:       table(url("fetch_html"), url("fetch_markdown"), url("fetch_txt"), url("fetch_json")),
	}
}

// fetchBuiltin models a URL-fetching server such as mcp-server-fetch: its
// fetch tool connects to the URL it is given.
func fetchBuiltin() *Builtin {
	return &Builtin{
		Name:        "fetch",
		Package:     "mcp-server-fetch",
		Description: "a URL-fetching server (tool fetch, argument url)",
		Tools: table(
			&Binding{Tool: "fetch", Tier: capability.TierDataRead, Args: []Arg{
				curatedArg("/url", capability.NetConnect, FormURL),
			}},
		),
	}
}
