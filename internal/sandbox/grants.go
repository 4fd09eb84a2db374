package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// within reports whether p is dir or lies below it, component-wise.
func within(p, dir string) bool {
	if dir == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == dir || strings.HasPrefix(p, dir) && len(p) > len(dir) && p[len(dir)] == '/'
}

// carve returns grants with holes cut out, for when no mount can hide a
// hole inside a grant (Landlock only grants): a grant that holds a hole is
// replaced by its entries, but the hole, recursively along the hole's
// path. A grant inside a hole is dropped; so is a directory that cannot be
// listed, and a symbolic link that leads into a hole. Entries created in a
// carved directory later are not granted (fail closed).
func carve(grants, holes []string) []string {
	var out []string
	for _, g := range grants {
		out = append(out, carveOne(g, holes, 0)...)
	}
	return cleanAll(out)
}

func carveOne(g string, holes []string, depth int) []string {
	inside := false
	for _, h := range holes {
		if within(g, h) {
			return nil
		}
		if within(h, g) {
			inside = true
		}
	}
	if real, err := filepath.EvalSymlinks(g); err == nil && real != g {
		for _, h := range holes {
			if within(real, h) {
				return nil
			}
		}
	}
	if !inside {
		return []string{g}
	}
	if depth > 32 {
		return nil
	}
	entries, err := os.ReadDir(g)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		out = append(out, carveOne(filepath.Join(g, e.Name()), holes, depth+1)...)
	}
	return out
}

// absentIn returns the trees that do not exist (no mount can hide them:
// the init skips them) and lie inside one of grants: a server could
// create them.
func absentIn(trees, grants []string) []string {
	var out []string
	for _, t := range trees {
		if _, err := filepath.EvalSymlinks(t); err == nil {
			continue
		}
		if slices.ContainsFunc(grants, func(g string) bool { return within(t, g) }) {
			out = append(out, t)
		}
	}
	return cleanAll(out)
}

// frozen returns the directories that [carve] replaces by their entries:
// from each grant that holds a hole, down the hole's path, each directory
// that exists. The server can make, remove or rename nothing directly in
// them.
func frozen(grants, holes []string) []string {
	var out []string
	for _, h := range holes {
		for _, g := range grants {
			if g == h || !within(h, g) {
				continue
			}
			for d := g; d != h; {
				if st, err := os.Stat(d); err != nil || !st.IsDir() {
					break
				}
				out = append(out, d)
				name, _, _ := strings.Cut(strings.TrimPrefix(h[len(d):], "/"), "/")
				d = filepath.Join(d, name)
			}
		}
	}
	return cleanAll(out)
}
