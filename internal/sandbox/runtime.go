package sandbox

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// systemRead are the trees every program may read and execute: the
// system's programs and libraries, the dynamic loader's configuration,
// certificates and time zones. None holds a user's data.
var systemRead = []string{
	"/usr", "/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin",
	"/etc/alternatives", "/etc/ssl", "/etc/ca-certificates", "/etc/pki",
	"/etc/crypto-policies", "/etc/ld.so.conf.d",
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/localtime", "/etc/timezone",
	"/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/hosts",
	"/etc/resolv.conf", "/etc/host.conf", "/etc/gai.conf", "/etc/mime.types",
	"/etc/os-release",
	// What runtimes read to size themselves: CPUs, memory, cgroup limits.
	"/proc/cpuinfo", "/proc/meminfo", "/proc/stat", "/proc/filesystems",
	"/sys/devices/system/cpu", "/sys/fs/cgroup", "/sys/kernel/mm/transparent_hugepage",
}

// devices are the device files every program may read and write.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}

// caches are the trees a package runner writes to fetch the server it
// starts, under the home directory, by the runner's name.
var caches = map[string][]string{
	"npx":  {".npm"},
	"npm":  {".npm"},
	"pnpm": {".local/share/pnpm", ".cache/pnpm"},
	"uvx":  {".cache/uv", ".local/share/uv"},
	"uv":   {".cache/uv", ".local/share/uv"},
}

// registries are the hosts a package runner fetches the server it starts
// from, by the runner's name: its runtime's network, as caches are its
// runtime's files. The egress proxy lets it reach them on port 443.
var registries = map[string][]string{
	"npx":  {"registry.npmjs.org"},
	"npm":  {"registry.npmjs.org"},
	"pnpm": {"registry.npmjs.org"},
	"uvx":  {"pypi.org", "files.pythonhosted.org"},
	"uv":   {"pypi.org", "files.pythonhosted.org"},
}

// RuntimeHosts returns the hosts the program at path (argv[0] as the
// sandbox resolved it) needs to reach to start: a package runner's
// registry; none for any other program.
func RuntimeHosts(path string) []string { return registries[filepath.Base(path)] }

// projectMarkers name files whose directory is a project root: a script
// given as an argument is granted its project's root, where its
// dependencies are.
var projectMarkers = []string{"package.json", "node_modules", "pyproject.toml", "setup.py", ".venv", "go.mod"}

// runtimeGrants returns what the program of argv needs to run, beyond the
// system's trees: read trees (its executable's installation, the
// interpreters of scripts, the project of a script argument) and write
// trees (a package runner's cache). path is argv[0] resolved; dir is the
// server's working directory; home is its home directory, never granted
// whole by these rules.
func runtimeGrants(path string, argv []string, dir, home, pathEnv string) (read, write []string) {
	seen := map[string]bool{}
	var visit func(p string, depth int)
	visit = func(p string, depth int) {
		if depth > 4 || seen[p] {
			return
		}
		seen[p] = true
		read = append(read, installDir(p, home))
		if real, err := filepath.EvalSymlinks(p); err == nil && real != p {
			read = append(read, installDir(real, home))
			p = real
		}
		if home != "" {
			for _, c := range caches[filepath.Base(p)] {
				// Made if missing, as the runner would make it: a tree
				// that does not exist cannot be granted.
				d := filepath.Join(home, c)
				os.MkdirAll(d, 0o700)
				write = append(write, d)
			}
		}
		interp, arg := shebang(p)
		if interp == "" {
			return
		}
		if filepath.Base(interp) == "env" && arg != "" {
			fields := strings.Fields(arg)
			for _, f := range fields {
				if !strings.HasPrefix(f, "-") && !strings.Contains(f, "=") {
					arg = f
					break
				}
			}
			if found, err := lookPath(arg, pathEnv); err == nil {
				visit(interp, depth+1)
				visit(found, depth+1)
				return
			}
		}
		visit(interp, depth+1)
	}
	visit(path, 0)
	for _, a := range argv[1:] {
		if !strings.Contains(a, "/") && !strings.Contains(a, ".") {
			continue
		}
		p := a
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			if real, err := filepath.EvalSymlinks(p); err == nil {
				p = real
			}
			read = append(read, projectRoot(p, home))
		}
	}
	return read, write
}

// installDir returns the tree to grant for an executable at p: the prefix
// of a bin directory (/opt/node for /opt/node/bin/node, where its
// libraries are), else its directory; never "/", the home directory or
// above it.
func installDir(p, home string) string {
	d := filepath.Dir(p)
	if b := filepath.Base(d); b == "bin" || b == "sbin" {
		if prefix := filepath.Dir(d); !tooWide(prefix, home) {
			return prefix
		}
	}
	if tooWide(d, home) {
		return p
	}
	return d
}

// projectRoot returns the tree to grant for a script at p: for a script
// under a node_modules, the directory holding the outermost one; else the
// nearest directory from p's up that holds a project marker, not the home
// directory or above, else p's directory, else (a script right in the
// home directory) p alone.
func projectRoot(p, home string) string {
	// A script inside a package installed with npm reads its dependencies
	// from the node_modules it was installed in, hoisted beside it, not
	// from its own package's directory: the root is the project holding
	// the outermost node_modules.
	if i := strings.Index(p, "/node_modules/"); i > 0 && !tooWide(p[:i], home) {
		return p[:i]
	}
	d := filepath.Dir(p)
	for cur, i := d, 0; i < 6 && !tooWide(cur, home); cur, i = filepath.Dir(cur), i+1 {
		for _, m := range projectMarkers {
			if _, err := os.Lstat(filepath.Join(cur, m)); err == nil {
				return cur
			}
		}
	}
	if tooWide(d, home) {
		return p
	}
	return d
}

// tooWide reports whether granting d would grant "/", the home directory
// or a directory above it.
func tooWide(d, home string) bool {
	if d == "/" || d == "." {
		return true
	}
	return home != "" && (d == home || strings.HasPrefix(home, d+"/"))
}

// shebang returns the interpreter of the script at p and its one
// argument, or "" if p is not a script.
func shebang(p string) (interp, arg string) {
	f, err := os.Open(p)
	if err != nil {
		return "", ""
	}
	defer f.Close()
	buf := make([]byte, 256)
	n, _ := io.ReadFull(f, buf)
	buf = buf[:n]
	if !bytes.HasPrefix(buf, []byte("#!")) {
		return "", ""
	}
	line, _, _ := bytes.Cut(buf[2:], []byte("\n"))
	fields := strings.SplitN(strings.TrimSpace(string(line)), " ", 2)
	if len(fields) == 0 || !filepath.IsAbs(fields[0]) {
		return "", ""
	}
	if len(fields) == 2 {
		arg = strings.TrimSpace(fields[1])
	}
	return fields[0], arg
}

// lookPath finds file in the directories of pathEnv, as the server's
// execve would: a name with a slash is taken as it is.
func lookPath(file, pathEnv string) (string, error) {
	if strings.Contains(file, "/") {
		if isExecutable(file) {
			return file, nil
		}
		return "", errors.New(file + ": not an executable file")
	}
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" || !filepath.IsAbs(d) {
			continue // a relative PATH entry would depend on the working directory
		}
		if p := filepath.Join(d, file); isExecutable(p) {
			return p, nil
		}
	}
	return "", errors.New(file + ": not found in PATH")
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}

// cleanAll returns the absolute, clean paths of ps; a relative path is
// dropped (fail closed: it would depend on the working directory).
func cleanAll(ps []string) []string {
	var out []string
	for _, p := range ps {
		if filepath.IsAbs(p) {
			out = append(out, filepath.Clean(p))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
